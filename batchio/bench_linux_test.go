//go:build linux

package batchio

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
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

			runEchoLoad(b, cli, srv.LocalAddr())
		})
	}
}

// BenchmarkWriteBurst compares the two ways WriteBatch can send a burst
// of 64 equal datagrams to one address: a sendmmsg header per datagram,
// or GSO runs (one header for 64-byte datagrams, two for 1200-byte ones,
// since 64 of those exceed a GSO send's 65,000 bytes). It reports
// datagrams sent per second and, to show none went missing, received
// per second by a goroutine that drains the receiver. On loopback the
// sender also pays for delivery, where the kernel splits GSO runs again,
// so a real NIC gains more.
//
//	go test -run '^$' -bench WriteBurst -benchtime 5000x ./batchio
func BenchmarkWriteBurst(b *testing.B) {
	for _, size := range []int{64, 1200} {
		for _, gso := range []bool{false, true} {
			name := "sendmmsg"
			if gso {
				name = "gso"
			}
			b.Run(fmt.Sprintf("%dB/%s", size, name), func(b *testing.B) {
				benchWriteBurst(b, size, gso)
			})
		}
	}
}

func benchWriteBurst(b *testing.B, size int, gso bool) {
	loopback := netip.MustParseAddrPort("127.0.0.1:0")
	cli, err := ListenMmsg(loopback, MmsgConfig{GSO: gso})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	if gso && !cli.GSO() {
		b.Skip("kernel without UDP GSO")
	}
	srv, err := ListenMmsg(loopback, MmsgConfig{})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var received atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		in := makeMsgs(srv.BatchSize(), size)
		for {
			n, err := srv.ReadBatch(in)
			if err != nil {
				return
			}
			received.Add(int64(n))
			if n == 0 && srv.WaitRead(time.Now().Add(10*time.Millisecond)) != nil {
				return
			}
		}
	}()
	defer func() {
		srv.Close()
		wg.Wait()
	}()

	out := makeMsgs(64, size)
	for i := range out {
		out[i].N, out[i].Addr = size, srv.LocalAddr()
	}
	sent := 0
	b.ReportAllocs()
	for b.Loop() {
		n, err := cli.WriteBatch(out)
		if err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "packets/s")
	b.ReportMetric(float64(received.Load())/b.Elapsed().Seconds(), "received/s")
	b.ReportMetric(float64(cli.Stats().SendCalls)/float64(b.N), "calls/op")
}
