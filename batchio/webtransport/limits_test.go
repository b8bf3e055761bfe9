package webtransport

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	wtgo "github.com/quic-go/webtransport-go"
)

// sessionAddrOf has the server learn a client's session address: the
// client sends a datagram, the server reads it.
func sessionAddrOf(t *testing.T, c *Conn, cl *ClientConn) netip.AddrPort {
	t.Helper()
	write(t, cl, cl.server, []byte("hi"))
	got := readN(t, c, 1)
	if len(got) != 1 {
		t.Fatal("no datagram from the client")
	}
	return got[0].Addr
}

func TestOversizedDatagramsDropped(t *testing.T) {
	checkGoroutines(t)
	c := listen(t, Config{MaxDatagramSize: 100})
	cl := dialT(t, c)
	small, big := bytes.Repeat([]byte{1}, 100), bytes.Repeat([]byte{2}, 101)
	write(t, cl, c.LocalAddr(), big, small, big, small, big)
	got := readN(t, c, 2)
	if len(got) != 2 || !bytes.Equal(got[0].Buf, small) || !bytes.Equal(got[1].Buf, small) {
		t.Fatalf("read %d datagrams; want the 2 of 100 bytes", len(got))
	}
	if !waitFor(func() bool { return c.TransportStats().DroppedOversized == 3 }) {
		t.Fatalf("DroppedOversized %d; want 3", c.TransportStats().DroppedOversized)
	}
}

func TestStreamRefused(t *testing.T) {
	for _, uni := range []bool{false, true} {
		name := map[bool]string{false: "bidi", true: "uni"}[uni]
		t.Run(name, func(t *testing.T) {
			checkGoroutines(t)
			c := listen(t, Config{})
			cl := dialT(t, c)
			other := dialT(t, c)
			sessionAddrOf(t, c, cl)
			// The write may fail: the server refuses the stream as soon
			// as it sees it.
			if uni {
				s, err := cl.sess.OpenUniStream()
				if err != nil {
					t.Fatal(err)
				}
				s.Write([]byte("stream data"))
			} else {
				s, err := cl.sess.OpenStream()
				if err != nil {
					t.Fatal(err)
				}
				s.Write([]byte("stream data"))
			}
			select {
			case <-cl.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the session that opened a stream is still open")
			}
			var serr *wtgo.SessionError
			if _, err := cl.sess.AcceptStream(context.Background()); !errors.As(err, &serr) || serr.ErrorCode != ErrorCodeStreamRefused {
				t.Fatalf("session ended with %v; want error code %#x", err, ErrorCodeStreamRefused)
			}
			if st := c.TransportStats(); st.StreamsRefused != 1 {
				t.Fatalf("StreamsRefused %d; want 1", st.StreamsRefused)
			}
			// The other session is untouched.
			if a := sessionAddrOf(t, c, other); !IsSessionAddr(a) {
				t.Fatal("other session broken")
			}
			if !waitFor(func() bool { return c.TransportStats().Sessions == 1 }) {
				t.Fatalf("sessions %d; want 1", c.TransportStats().Sessions)
			}
		})
	}
}

// TestSessionFloodFromOneIP: one IP opening sessions as fast as it can
// gets its burst and no more, while another IP still gets in.
func TestSessionFloodFromOneIP(t *testing.T) {
	checkGoroutines(t)
	c := listen(t, Config{Addr: netip.MustParseAddrPort("[::]:0"),
		SessionsPerSecondPerIP: 0.001, SessionBurstPerIP: 4})
	dialTo := func(host string) (*ClientConn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return Dial(ctx, c.URL(host), c.CertificateHash())
	}
	ok := 0
	for range 8 {
		cl, err := dialTo("127.0.0.1")
		if err == nil {
			ok++
			defer cl.Close()
		}
	}
	// A QUIC connection and its session take one token each.
	if ok != 2 {
		t.Fatalf("%d of 8 sessions from one IP opened; want 2 (a burst of 4 tokens)", ok)
	}
	st := c.TransportStats()
	if st.RefusedRateIP < 6 {
		t.Fatalf("RefusedRateIP %d; want at least 6", st.RefusedRateIP)
	}
	honest, err := dialTo("::1")
	if err != nil {
		t.Fatalf("another IP refused during the flood: %v", err)
	}
	defer honest.Close()
	if a := sessionAddrOf(t, c, honest); !IsSessionAddr(a) {
		t.Fatal("honest session broken")
	}
}

func TestMaxSessionsAndPending(t *testing.T) {
	checkGoroutines(t)
	t.Run("pending", func(t *testing.T) {
		c := listen(t, Config{MaxPendingSessions: 2})
		dialT(t, c)
		dialT(t, c)
		if _, err := dialHdr(c, nil); err == nil {
			t.Fatal("a third unanswered session opened; want it refused")
		}
		if st := c.TransportStats(); st.RefusedPending != 1 || st.Pending != 2 {
			t.Fatalf("stats %+v; want 2 pending and 1 refused as pending", st)
		}
	})
	t.Run("max", func(t *testing.T) {
		c := listen(t, Config{MaxSessions: 2})
		a := dialT(t, c)
		b := dialT(t, c)
		// Answered sessions are no longer pending; they still count.
		write(t, c, sessionAddrOf(t, c, a), []byte("x"))
		write(t, c, sessionAddrOf(t, c, b), []byte("x"))
		if _, err := dialHdr(c, nil); err == nil {
			t.Fatal("a third session opened; want it refused")
		}
		// (A client may resend its first packet before the refusal
		// reaches it: each attempt is counted.)
		if st := c.TransportStats(); st.RefusedMaxSessions < 1 || st.Sessions != 2 {
			t.Fatalf("stats %+v; want 2 sessions and the third refused", st)
		}
	})
}

func TestOriginCheck(t *testing.T) {
	checkGoroutines(t)
	c := listen(t, Config{AllowedOrigins: []string{"https://game.example"}})
	if _, err := dialHdr(c, http.Header{"Origin": {"https://evil.example"}}); err == nil {
		t.Fatal("a session from a page of another origin opened")
	}
	if _, err := dialHdr(c, nil); err == nil {
		t.Fatal("a session without an origin opened, with AllowedOrigins set")
	}
	cl, err := dialHdr(c, http.Header{"Origin": {"https://GAME.example"}})
	if err != nil {
		t.Fatalf("allowed origin refused: %v", err)
	}
	defer cl.Close()
	// The listener counts a session it accepted after answering it, and
	// not at all if the client has closed it by then: wait with it open.
	if !waitFor(func() bool { st := c.TransportStats(); return st.RefusedOrigin == 2 && st.Accepted == 1 }) {
		t.Fatalf("stats %+v; want 2 refused by origin, 1 accepted", c.TransportStats())
	}
}

func TestIdleAndHandshakeTimeouts(t *testing.T) {
	checkGoroutines(t)
	c := listen(t, Config{IdleTimeout: 200 * time.Millisecond, HandshakeTimeout: 200 * time.Millisecond})
	unanswered := dialT(t, c)
	silent := dialT(t, c)
	write(t, c, sessionAddrOf(t, c, silent), []byte("answer")) // then it says nothing
	select {
	case <-unanswered.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("unanswered session not closed")
	}
	select {
	case <-silent.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("silent session not closed")
	}
	if !waitFor(func() bool {
		st := c.TransportStats()
		return st.ClosedHandshake == 1 && st.ClosedIdle == 1 && st.Sessions == 0 && st.Pending == 0
	}) {
		t.Fatalf("stats %+v; want 1 closed unanswered, 1 closed idle, none left", c.TransportStats())
	}
}

// TestFloodingSessionCostsOthersNothing: while the server's reader is
// busy, a session floods; it loses its own datagrams beyond its share and
// rate, and an honest session's datagrams all get through.
func TestFloodingSessionCostsOthersNothing(t *testing.T) {
	checkGoroutines(t)
	c := listen(t, Config{InboxSize: 128, SessionQueue: 32, DatagramsPerSecond: 1e6, DatagramBurst: 1 << 20})
	flood, honest := dialT(t, c), dialT(t, c)
	floodAddr := sessionAddrOf(t, c, flood)
	honestAddr := sessionAddrOf(t, c, honest)
	// The flood fills its share first (the server reads nothing).
	for range 20 {
		var burst [][]byte
		for range 50 {
			burst = append(burst, []byte("flood"))
		}
		write(t, flood, c.LocalAddr(), burst...)
		time.Sleep(time.Millisecond)
	}
	if !waitFor(func() bool { return c.TransportStats().DroppedSessionFull > 0 }) {
		t.Fatal("the flood never reached its share")
	}
	for i := range 20 {
		write(t, honest, c.LocalAddr(), []byte{'h', byte(i)})
	}
	got := map[netip.AddrPort]int{}
	msgs := batchio.NewMessages(64, 1500)
	for deadline := time.Now().Add(5 * time.Second); got[honestAddr] < 20 && time.Now().Before(deadline); {
		n, _ := c.ReadBatch(msgs)
		for _, m := range msgs[:n] {
			got[m.Addr]++
		}
		if n == 0 {
			c.WaitRead(time.Now().Add(10 * time.Millisecond))
		}
	}
	if got[honestAddr] != 20 {
		t.Fatalf("honest session: %d of 20 datagrams read", got[honestAddr])
	}
	st := c.TransportStats()
	if st.DroppedInboxFull != 0 {
		t.Fatalf("DroppedInboxFull %d; the flood's share should stop it first", st.DroppedInboxFull)
	}
	t.Logf("flood: %d read, %d dropped over its share", got[floodAddr], st.DroppedSessionFull)
}

func TestDatagramRateLimit(t *testing.T) {
	checkGoroutines(t)
	c := listen(t, Config{DatagramsPerSecond: 0.001, DatagramBurst: 10})
	cl := dialT(t, c)
	for i := range 30 {
		write(t, cl, c.LocalAddr(), []byte{byte(i)})
		time.Sleep(time.Millisecond)
	}
	if !waitFor(func() bool { return c.TransportStats().DroppedRate == 20 }) {
		t.Fatalf("DroppedRate %d; want 20 (30 sent, burst 10)", c.TransportStats().DroppedRate)
	}
	if got := readN(t, c, 10); len(got) != 10 {
		t.Fatalf("read %d; want the burst of 10", len(got))
	}
}

// relay forwards UDP between one client and a server, and can stall: drop
// everything both ways, as a browser whose machine froze.
type relay struct {
	pc      net.PacketConn
	server  *net.UDPAddr
	stalled atomic.Bool
	wg      sync.WaitGroup
}

func newRelay(t *testing.T, server netip.AddrPort) *relay {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{pc: pc, server: net.UDPAddrFromAddrPort(server)}
	var client atomic.Pointer[net.UDPAddr]
	r.wg.Go(func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if r.stalled.Load() {
				continue
			}
			u := from.(*net.UDPAddr)
			if u.AddrPort() == r.server.AddrPort() {
				if to := client.Load(); to != nil {
					pc.WriteTo(buf[:n], to)
				}
				continue
			}
			client.Store(u)
			pc.WriteTo(buf[:n], r.server)
		}
	})
	t.Cleanup(func() { pc.Close(); r.wg.Wait() })
	return r
}

// TestStalledSessionCostsOthersNothing: the server keeps writing to a
// session whose browser stopped acknowledging; WriteBatch drops the excess
// (it never waits for that browser) and an honest session gets every
// reply.
func TestStalledSessionCostsOthersNothing(t *testing.T) {
	checkGoroutines(t)
	c := listen(t, Config{SendQueue: 16, IdleTimeout: time.Minute})
	r := newRelay(t, c.LocalAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stalled, err := Dial(ctx, "https://"+r.pc.LocalAddr().String()+DefaultPath, c.CertificateHash())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	honest := dialT(t, c)
	stalledAddr := sessionAddrOf(t, c, stalled)
	honestAddr := sessionAddrOf(t, c, honest)
	r.stalled.Store(true)

	payload := bytes.Repeat([]byte{7}, 1000)
	const rounds = 100
	received := 0
	for i := range rounds {
		write(t, c, stalledAddr, payload, payload, payload, payload, payload, payload, payload, payload, payload, payload)
		write(t, c, honestAddr, []byte{byte(i)})
		received += len(readN(t, honest, 1))
	}
	if received != rounds {
		t.Fatalf("honest session got %d of %d replies while another stalled", received, rounds)
	}
	if st := c.TransportStats(); st.SendQueueFull == 0 {
		t.Fatalf("stats %+v; want the stalled session's excess dropped as SendQueueFull", st)
	}
}
