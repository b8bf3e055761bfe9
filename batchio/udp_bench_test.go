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

	runEchoLoad(b, cli, srv.LocalAddr())
	s := srv.Stats()
	b.ReportMetric(float64(s.InboxFull)/float64(s.RecvPackets+s.InboxFull+1), "inbox-drop-ratio")
}
