//go:build linux

package batchio

import (
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"
)

// echoServer echoes every datagram back to its source until stop is
// closed, the bare loop (no protocol, no crypto) that bounds what a server
// built on this socket can do.
func echoServer(c *MmsgConn, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	if c.Mode() == RecvBlock {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	msgs := makeMsgs(c.BatchSize(), 1500)
	for {
		select {
		case <-stop:
			return
		default:
		}
		n, err := c.ReadBatch(msgs)
		if err != nil {
			return
		}
		if n == 0 {
			if c.WaitRead(time.Now().Add(10*time.Millisecond)) != nil {
				return
			}
			continue
		}
		if _, err := c.WriteBatch(msgs[:n]); err != nil {
			return
		}
	}
}

// BenchmarkLoopbackEcho measures echoed packets/s for each receive mode: a
// load goroutine keeps a window of 64-byte datagrams in flight to an echo
// server and counts the echoes. Run the modes in one invocation and compare
// them as ratios:
//
//	go test -run '^$' -bench LoopbackEcho ./batchio
func BenchmarkLoopbackEcho(b *testing.B) {
	for mode := RecvMode(0); mode < numRecvModes; mode++ {
		b.Run(mode.String(), func(b *testing.B) {
			srv, err := ListenMmsg(netip.MustParseAddrPort("127.0.0.1:0"), MmsgConfig{Mode: mode})
			if err != nil {
				b.Fatal(err)
			}
			cli, err := ListenMmsg(netip.MustParseAddrPort("127.0.0.1:0"), MmsgConfig{})
			if err != nil {
				b.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go echoServer(srv, stop, &wg)
			defer func() {
				close(stop)
				srv.Close()
				wg.Wait()
				cli.Close()
			}()

			const window, burst = 256, 32
			out := makeMsgs(burst, 64)
			for i := range out {
				out[i].N, out[i].Addr = 64, srv.LocalAddr()
			}
			in := makeMsgs(64, 1500)
			inFlight, received := 0, 0
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			lastProgress := start
			for received < b.N {
				for inFlight+burst <= window {
					n, err := cli.WriteBatch(out)
					if err != nil {
						b.Fatal(err)
					}
					inFlight += n
				}
				n, err := cli.ReadBatch(in)
				if err != nil {
					b.Fatal(err)
				}
				if n > 0 {
					received += n
					inFlight -= n
					lastProgress = time.Now()
					continue
				}
				if err := cli.WaitRead(time.Now().Add(5 * time.Millisecond)); err != nil {
					b.Fatal(err)
				}
				if time.Since(lastProgress) > 20*time.Millisecond {
					// Datagrams were lost (socket buffer overflow): refill
					// the window rather than stall.
					inFlight = 0
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(received)/elapsed.Seconds(), "packets/s")
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(received), "ns/packet")
		})
	}
}
