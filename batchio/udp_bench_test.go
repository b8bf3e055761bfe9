package batchio

import (
	"net/netip"
	"sync"
	"testing"
	"time"
)

// udpEcho echoes every datagram back to its source until c is closed.
func udpEcho(c Conn, wg *sync.WaitGroup) {
	defer wg.Done()
	msgs := makeMsgs(64, 1500)
	for {
		n, err := c.ReadBatch(msgs)
		if err != nil {
			return
		}
		if n == 0 {
			if c.WaitRead(time.Time{}) != nil {
				return
			}
			continue
		}
		if _, err := c.WriteBatch(msgs[:n]); err != nil {
			return
		}
	}
}

// BenchmarkUDPEcho measures echoed packets/s through the portable UDPConn
// on loopback: a window of 64-byte datagrams is kept in flight to an echo
// server and the echoes are counted. Compare with BenchmarkLoopbackEcho
// (Linux) in the same run:
//
//	go test -run '^$' -bench 'UDPEcho|LoopbackEcho' ./batchio
func BenchmarkUDPEcho(b *testing.B) {
	srv, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), UDPConfig{})
	if err != nil {
		b.Fatal(err)
	}
	cli, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), UDPConfig{})
	if err != nil {
		srv.Close()
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go udpEcho(srv, &wg)
	defer func() {
		srv.Close() // ends udpEcho
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
			// Datagrams were lost (a full inbox or socket buffer): refill
			// the window rather than stall.
			inFlight = 0
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(received)/elapsed.Seconds(), "packets/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(received), "ns/packet")
	s := srv.Stats()
	b.ReportMetric(float64(s.InboxFull)/float64(s.RecvPackets+s.InboxFull+1), "inbox-drop-ratio")
}
