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

			runEchoLoad(b, cli, srv.LocalAddr())
		})
	}
}
