package engine

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

// squatConn is a client's conn watched by an on-path observer: the first
// connection request the client sends is copied to the squatter, who
// sends it to the server from its own address, and wins the race.
type squatConn struct {
	batchio.Conn
	squatter *batchiotest.MemConn
	copied   bool
}

func (c *squatConn) WriteBatch(msgs []batchio.Message) (int, error) {
	if !c.copied && len(msgs) > 0 && msgs[0].N > 0 && msgs[0].Buf[0] == 0 { // a request
		c.copied = true
		cp := []batchio.Message{{Buf: append([]byte(nil), msgs[0].Buf[:msgs[0].N]...), N: msgs[0].N, Addr: msgs[0].Addr}}
		if _, err := c.squatter.WriteBatch(cp); err != nil {
			return 0, err
		}
	}
	return c.Conn.WriteBatch(msgs)
}

// TestClientNoChallengeSquatter: an on-path observer presents a copy of
// the client's first request from another address first, so the server
// keeps the token pending for the squatter and ignores the client's own
// requests. The client reports ConnectionRequestUnanswered after
// NoChallengeTimeout (not the token's 10 s timeout), and a fresh token
// connects at once.
func TestClientNoChallengeSquatter(t *testing.T) {
	nw, err := batchiotest.NewMemNetwork(batchiotest.MemConfig{})
	if err != nil {
		t.Fatal(err)
	}
	listen := func(a string) *batchiotest.MemConn {
		c, err := nw.Listen(netip.MustParseAddrPort(a))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	sconn := listen("10.0.0.1:40000")
	now := srvEpoch.Add(-srvStartGrace) // the server starts before the tokens
	srv, err := NewServer(ServerConfig{ProtocolID: srvProtocol, PrivateKey: testPrivateKey, MaxClients: 4,
		Manual: true, Clock: func() time.Time { return now }}, sconn)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	now = srvEpoch
	squatter := listen("198.51.100.66:7000")
	client, err := NewClient(ClientConfig{}, &squatConn{Conn: listen("10.1.0.1:5000"), squatter: squatter})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	token := func() []byte {
		tok, err := GenerateConnectToken(TokenParams{ProtocolID: srvProtocol, PrivateKey: testPrivateKey, ClientID: 77,
			PublicAddresses: []netip.AddrPort{sconn.LocalAddr()}, ExpireSeconds: 30, TimeoutSeconds: 10, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	run := func(until func() bool) time.Duration {
		start := now
		for range 300 { // 3 s
			if until() {
				break
			}
			now = now.Add(10 * time.Millisecond)
			client.Update(now)
			if err := srv.Update(now); err != nil {
				t.Fatal(err)
			}
			srv.Poll(func(*Event) {})
		}
		return now.Sub(start)
	}

	if err := client.Connect(token(), now); err != nil {
		t.Fatal(err)
	}
	took := run(func() bool { return client.State() != SendingConnectionRequest })
	if client.State() != ConnectionRequestUnanswered {
		t.Fatalf("state %v after %v, want connection request unanswered", client.State(), took)
	}
	if took < DefaultNoChallengeTimeout || took > DefaultNoChallengeTimeout+20*time.Millisecond {
		t.Fatalf("unanswered after %v, want %v", took, DefaultNoChallengeTimeout)
	}
	// The squatter won: its copy got the challenge, the client's requests
	// were refused as from another address.
	msgs := batchio.NewMessages(4, codec.MaxPacketBytes)
	if n, _ := squatter.ReadBatch(msgs); n != 1 || msgs[0].Buf[0]&0xf != byte(codec.ConnectionChallenge) {
		t.Fatalf("the squatter read %d datagrams, want its challenge", n)
	}
	if got := srv.Stats().Drops[ServerDropTokenOtherAddress]; got < 9 {
		t.Fatalf("ServerDropTokenOtherAddress = %d, want the client's 10 requests", got)
	}
	// The game fetches a fresh token at once; the observer copies only
	// the first request.
	if err := client.Connect(token(), now); err != nil {
		t.Fatal(err)
	}
	took = run(func() bool { return client.State() == Connected })
	if client.State() != Connected || took > 100*time.Millisecond {
		t.Fatalf("fresh token: state %v after %v, want connected at once", client.State(), took)
	}
}

// TestClientNoChallengeTimeoutConfig: the bound is validated.
func TestClientNoChallengeTimeoutConfig(t *testing.T) {
	for _, d := range []time.Duration{-2, time.Millisecond, 99 * time.Millisecond, time.Minute + 1} {
		if _, err := NewClient(ClientConfig{NoChallengeTimeout: d}); err == nil {
			t.Errorf("NoChallengeTimeout %v accepted", d)
		}
	}
	for _, d := range []time.Duration{-1, 0, 100 * time.Millisecond, time.Minute} {
		if _, err := NewClient(ClientConfig{NoChallengeTimeout: d}); err != nil {
			t.Errorf("NoChallengeTimeout %v: %v", d, err)
		}
	}
}
