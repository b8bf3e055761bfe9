package batchio_test

import (
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/bench"
)

// The echo benchmarks measure echoed packets/s through a socket on
// loopback: a load keeps a window of 64-byte datagrams in flight to an
// echo server and counts the echoes. They live in an external test
// package so that they can compare Listen's sockets with the
// comparison-only receive modes of package bench. Run them in one
// invocation and compare them as ratios:
//
//	go test -run '^$' -bench 'LoopbackEcho|UDPEcho' ./batchio

// echo echoes every datagram back to its source until c is closed, the
// bare loop (no protocol, no crypto) that bounds what a server built on
// the socket can do. A BlockingWait socket gets its own OS thread.
func echo(c batchio.Conn, wg *sync.WaitGroup) {
	defer wg.Done()
	if s, ok := batchio.As[batchio.StatsReader](c); ok && s.Stats().BlockingWait {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	msgs := batchio.NewMessages(64, 1500)
	for {
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

// benchEcho runs echo on srv and the load on cli; it closes both.
func benchEcho(b *testing.B, srv, cli batchio.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go echo(srv, &wg)
	defer func() {
		srv.Close() // ends echo
		wg.Wait()
		cli.Close()
	}()
	runEchoLoad(b, cli, srv.LocalAddr())
}

// BenchmarkLoopbackEcho compares the receive modes: Listen's socket
// waiting on the netpoller (mmsg) or in poll(2) (block), and package
// bench's comparison conns, x/net's ReadBatch (xnet) and a system call
// per datagram (single). The load's socket is Listen's in every case.
func BenchmarkLoopbackEcho(b *testing.B) {
	loopback := netip.MustParseAddrPort("127.0.0.1:0")
	for _, mode := range []string{"mmsg", "block", "xnet", "single"} {
		b.Run(mode, func(b *testing.B) {
			var srv batchio.Conn
			var err error
			switch mode {
			case "mmsg", "block":
				srv, err = batchio.Listen(loopback, batchio.Config{BlockingWait: mode == "block", DisableGSO: true})
			default:
				srv, err = bench.ListenComparison(loopback, mode, batchio.Config{})
			}
			if err != nil {
				b.Skip(err) // the comparison modes need Linux
			}
			cli, err := batchio.Listen(loopback, batchio.Config{DisableGSO: true})
			if err != nil {
				srv.Close()
				b.Fatal(err)
			}
			benchEcho(b, srv, cli)
		})
	}
}

// BenchmarkUDPEcho is BenchmarkLoopbackEcho for the portable socket that
// Listen opens outside Linux, on both ends.
func BenchmarkUDPEcho(b *testing.B) {
	loopback := netip.MustParseAddrPort("127.0.0.1:0")
	srv, err := batchio.ListenPortable(loopback)
	if err != nil {
		b.Fatal(err)
	}
	cli, err := batchio.ListenPortable(loopback)
	if err != nil {
		srv.Close()
		b.Fatal(err)
	}
	benchEcho(b, srv, cli)
	s := srv.(batchio.StatsReader).Stats()
	full := batchio.PortableInboxFull(srv)
	b.ReportMetric(float64(full)/float64(s.RecvPackets+full+1), "inbox-drop-ratio")
}

// runEchoLoad keeps a window of 64-byte datagrams in flight from cli to an
// echo server at to until b.N echoes came back, and reports packets/s and
// ns/packet. The benchmarks of every conn kind share it, so their figures
// compare.
func runEchoLoad(b *testing.B, cli batchio.Conn, to netip.AddrPort) {
	const window, burst = 256, 32
	out := batchio.NewMessages(burst, 64)
	for i := range out {
		out[i].N, out[i].Addr = 64, to
	}
	in := batchio.NewMessages(64, 1500)
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
			// Datagrams were lost (a full inbox or socket buffer): refill
			// the window rather than stall.
			inFlight = 0
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(received)/elapsed.Seconds(), "packets/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(received), "ns/packet")
}
