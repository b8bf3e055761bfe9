package engine

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

// Every configured bound, exercised at its edge: the last item that fits
// is accepted, the next is refused and counted, and room made by the
// application or protocol is usable again.

func advAddr(k int) string {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(k + 1)}), 5000).String()
}

func TestLimitEncryptionMappings(t *testing.T) {
	const m = 3
	h := newSrvHarness(t, ServerConfig{MaxEncryptionMappings: m})
	var peers []*srvPeer
	for k := range m {
		p := h.peer(advAddr(k), uint64(k+1), nil)
		p.challenged() // m-th mapping still fits
		peers = append(peers, p)
	}
	extra := h.peer(advAddr(m), m+1, nil)
	extra.send(extra.request())
	extra.expectNothing("request with the mapping table full")
	if got := h.drops(ServerDropMappingTableFull); got != 1 {
		t.Fatalf("ServerDropMappingTableFull = %d, want 1", got)
	}
	peers[0].challenged() // an address with a mapping still gets answers
	if got := h.drops(ServerDropMappingTableFull); got != 1 {
		t.Fatalf("a repeated request took a new mapping")
	}
	// Finishing a handshake moves the keys to the slot and frees the entry.
	srvExpectTypes(t, "response", peers[1].send(peers[1].response()), codec.ConnectionKeepAlive)
	extra.challenged()
}

// TestLimitTokenHistoryFull: a history whose entries all hold unexpired
// tokens refuses new tokens and evicts nothing, so a flood of valid tokens
// can never make a remembered one usable from another address; the owners
// of pending tokens still complete their handshakes, and entries come back
// when their tokens expire.
func TestLimitTokenHistoryFull(t *testing.T) {
	const size = 3
	h := newSrvHarness(t, ServerConfig{testHistorySize: size, MaxEncryptionMappings: 16})
	thief := func(p *srvPeer) *srvPeer {
		return h.peerWithToken(netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, 9}), p.addr.Port()).String(), p.token)
	}
	var peers []*srvPeer
	for k := range size {
		p := h.peer(advAddr(k), uint64(k+1), nil)
		p.challenged()
		peers = append(peers, p)
	}
	// Full: 2,100 more fresh tokens are all refused and nothing is evicted,
	// so the oldest token is still refused from another address.
	for k := range 2100 {
		p := h.peer(advAddr(size+k), uint64(100+k), nil)
		p.send(p.request())
		p.expectNothing("new token with the history full")
	}
	if got := h.drops(ServerDropTokenHistoryFull); got != 2100 {
		t.Fatalf("ServerDropTokenHistoryFull = %d, want 2100", got)
	}
	th := thief(peers[0])
	th.send(th.request())
	th.expectNothing("oldest token from another address with the history full")
	if got := h.drops(ServerDropTokenOtherAddress); got != 1 {
		t.Fatalf("ServerDropTokenOtherAddress = %d, want 1", got)
	}
	// The pending owners still finish: a retransmitted request is answered
	// and the response gets the slot.
	for _, p := range peers {
		p.connect()
	}
	if h.s.NumConnectedClients() != size {
		t.Fatalf("%d connected, want %d", h.s.NumConnectedClients(), size)
	}
	// Once the tokens expire (30 s) their entries free up for new tokens.
	h.step(31 * time.Second)
	late := h.peer(advAddr(3000), 3000, nil)
	late.challenged()
	if got := h.s.adm.history.pending.Load() + h.s.adm.history.consumed.Load(); got != 1 {
		t.Fatalf("history holds %d entries after the old tokens expired, want 1", got)
	}
}

// TestLimitEventQueueFull: payloads that find the shard's event queue full
// (the application has not polled) are dropped and counted; the queue
// keeps the oldest, in order, and takes new ones once polled.
func TestLimitEventQueueFull(t *testing.T) {
	const q = 4
	h := newSrvHarness(t, ServerConfig{EventQueueSize: q})
	a := h.peer(advAddr(0), 1, nil)
	i := a.connect()
	raw := func(s string) { // delivered without polling
		h.conns[0].Push(a.addr, a.payload([]byte(s)))
		if err := h.s.Update(h.now); err != nil {
			t.Fatal(err)
		}
	}
	for k := range q {
		raw(string(rune('0' + k)))
	}
	if got := h.drops(ServerDropAppBacklog); got != 0 {
		t.Fatalf("ServerDropAppBacklog = %d with %d payloads in a %d-entry queue", got, q, q)
	}
	raw("x")
	if got := h.drops(ServerDropAppBacklog); got != 1 {
		t.Fatalf("ServerDropAppBacklog = %d, want 1", got)
	}
	h.poll()
	raw("4")
	h.poll()
	if got := strings.Join(advDrain(h, i), ""); got != "01234" || h.drops(ServerDropAppBacklog) != 1 {
		t.Fatalf("queue held %q (drops %d), want 01234", got, h.drops(ServerDropAppBacklog))
	}
}

// TestLimitEventQueueAdmission: a response is ignored (the client retries)
// while the shard's connect/disconnect ring could not also hold the new
// client's events, and a polled ring admits it.
func TestLimitEventQueueAdmission(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{MaxClients: 2})
	sh := h.s.shard0()
	a := h.peer(advAddr(0), 1, nil)
	a.challenged()
	// Fill the event ring to where a new client no longer fits, as an
	// application that stopped polling leaves it.
	for sh.canAdmit() {
		sh.pushEvent(EventPayload, 0, 0)
	}
	a.h.conns[0].Push(a.addr, a.response())
	if err := h.s.Update(h.now); err != nil {
		t.Fatal(err)
	}
	a.expectNothing("response while the event ring is full")
	if got := h.drops(ServerDropAppBacklog); got != 1 {
		t.Fatalf("ServerDropAppBacklog = %d, want 1", got)
	}
	for sh.events.Len() > 0 { // the application catches up
		sh.events.Release()
	}
	srvExpectTypes(t, "response after polling", a.send(a.response()), codec.ConnectionKeepAlive)
}

// TestLimitSendBatchFull queues far more datagrams in one Update than a
// send batch holds, to two clients: all go out, in order, and none is
// counted as a failure.
func TestLimitSendBatchFull(t *testing.T) {
	const perClient = 500
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer(advAddr(0), 1, nil)
	b := h.peer(advAddr(1), 2, nil)
	ia, ib := a.connect(), b.connect()
	a.send(a.keepAlive()) // confirmed: no keep-alive before each payload
	b.send(b.keepAlive())
	before := h.s.Stats()
	for k := range perClient {
		for _, i := range []int{ia, ib} {
			if err := h.s.SendPacket(i, []byte(fmt.Sprint(k))); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.update()
	for _, p := range []*srvPeer{a, b} {
		pkts := p.received()
		if len(pkts) != perClient {
			t.Fatalf("%v received %d of %d payloads", p.addr, len(pkts), perClient)
		}
		for k, pkt := range pkts {
			if pkt.Type != codec.ConnectionPayload || string(pkt.Payload) != fmt.Sprint(k) {
				t.Fatalf("%v: datagram %d is %v %q", p.addr, k, pkt.Type, pkt.Payload)
			}
		}
	}
	st := h.s.Stats()
	if st.SendFailures != before.SendFailures || st.PacketsOut-before.PacketsOut != 2*perClient {
		t.Fatalf("PacketsOut grew by %d, SendFailures by %d; want %d, 0",
			st.PacketsOut-before.PacketsOut, st.SendFailures-before.SendFailures, 2*perClient)
	}
}

func TestLimitMaxClientsFull(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			h := newSrvHarness(t, ServerConfig{MaxClients: n})
			var peers []*srvPeer
			for k := range n {
				p := h.peer(advAddr(k), uint64(k+1), nil)
				p.connect() // the n-th slot is still free
				peers = append(peers, p)
			}
			late := h.peer(advAddr(n), uint64(n+1), nil)
			srvExpectTypes(t, "request to a full server", late.send(late.request()), codec.ConnectionDenied)
			if st := h.s.Stats(); st.DeniedSent != 1 || h.s.NumConnectedClients() != n {
				t.Fatalf("DeniedSent %d, %d clients", st.DeniedSent, h.s.NumConnectedClients())
			}
			peers[0].send(peers[0].disconnect())
			late.connect()
		})
	}
}

// TestLimitConfigOutOfRange: each bound just outside its range is an error
// naming the field and what is allowed; just inside it is accepted (where
// the inside edge is cheap to allocate).
func TestLimitConfigOutOfRange(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*ServerConfig)
		want []string // substrings of the error; none: valid
	}{
		{"PrivateKey 33 bytes", func(c *ServerConfig) { c.PrivateKey = make([]byte, 33) }, []string{"PrivateKey", "33", "32"}},
		{"MaxClients 1", func(c *ServerConfig) { c.MaxClients = 1 }, nil},
		{"MaxClients -1", func(c *ServerConfig) { c.MaxClients = -1 }, []string{"MaxClients", "-1", "1 to 65536"}},
		{"MaxClients max+1", func(c *ServerConfig) { c.MaxClients = MaxServerClients + 1 }, []string{"MaxClients", "65537", "1 to 65536"}},
		{"EventQueueSize 4", func(c *ServerConfig) { c.EventQueueSize = 4 }, nil},
		{"EventQueueSize 2^20", func(c *ServerConfig) { c.EventQueueSize = 1 << 20 }, nil},
		{"EventQueueSize 2", func(c *ServerConfig) { c.EventQueueSize = 2 }, []string{"EventQueueSize", "2", "power of two from 4 to 1048576"}},
		{"EventQueueSize 6", func(c *ServerConfig) { c.EventQueueSize = 6 }, []string{"EventQueueSize", "6", "power of two"}},
		{"EventQueueSize 2^21", func(c *ServerConfig) { c.EventQueueSize = 1 << 21 }, []string{"EventQueueSize", "2097152", "power of two from 4 to 1048576"}},
		{"SendQueueSize 4 (default mode)", func(c *ServerConfig) { c.Manual = false; c.SendQueueSize = 4 }, nil},
		{"SendQueueSize -4 (default mode)", func(c *ServerConfig) { c.Manual = false; c.SendQueueSize = -4 }, []string{"SendQueueSize", "-4", "power of two from 4 to 1048576"}},
		{"SendQueueSize in manual mode", func(c *ServerConfig) { c.SendQueueSize = 4 }, []string{"SendQueueSize 4", "default mode", "manual mode"}},
		{"SendLoopbackPacket in the default mode", func(c *ServerConfig) { c.Manual = false; c.SendLoopbackPacket = func(int, []byte, uint64) {} },
			[]string{"SendLoopbackPacket", "manual mode"}},
		{"Shards with given conns", func(c *ServerConfig) { c.Shards = 2 }, []string{"Shards 2", "Listen", "one shard per conn"}},
		{"MaxEncryptionMappings 1", func(c *ServerConfig) { c.MaxEncryptionMappings = 1 }, nil},
		{"MaxEncryptionMappings -1", func(c *ServerConfig) { c.MaxEncryptionMappings = -1 }, []string{"MaxEncryptionMappings", "-1", "1 to 1048576"}},
		{"MaxEncryptionMappings max+1", func(c *ServerConfig) { c.MaxEncryptionMappings = 1<<20 + 1 }, []string{"MaxEncryptionMappings", "1048577", "1 to 1048576"}},
		{"TokenHistorySize 2048", func(c *ServerConfig) { c.TokenHistorySize = 2048 }, nil},
		{"TokenHistorySize 2047", func(c *ServerConfig) { c.TokenHistorySize = 2047 }, []string{"TokenHistorySize", "2047", "2048 to 4194304"}},
		{"TokenHistorySize -1", func(c *ServerConfig) { c.TokenHistorySize = -1 }, []string{"TokenHistorySize", "-1", "2048 to 4194304"}},
		{"TokenHistorySize max+1", func(c *ServerConfig) { c.TokenHistorySize = 1<<22 + 1 }, []string{"TokenHistorySize", "4194305", "2048 to 4194304"}},
		{"MaxConnectTokenLifetime 1s", func(c *ServerConfig) { c.MaxConnectTokenLifetime = time.Second }, nil},
		{"MaxConnectTokenLifetime 24h", func(c *ServerConfig) { c.MaxConnectTokenLifetime = 24 * time.Hour }, nil},
		{"MaxConnectTokenLifetime 999ms", func(c *ServerConfig) { c.MaxConnectTokenLifetime = 999 * time.Millisecond }, []string{"MaxConnectTokenLifetime", "999ms", "whole seconds from 1s to 24h0m0s"}},
		{"MaxConnectTokenLifetime 24h+1s", func(c *ServerConfig) { c.MaxConnectTokenLifetime = 24*time.Hour + time.Second }, []string{"MaxConnectTokenLifetime", "24h0m1s", "whole seconds from 1s to 24h0m0s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ServerConfig{PrivateKey: testPrivateKey, ProtocolID: 1, Manual: true}
			c.edit(&cfg)
			s, err := NewServer(cfg, batchiotest.NewConn(srvAddr))
			if len(c.want) == 0 {
				if err != nil || s == nil {
					t.Fatalf("config at the edge of its range refused: %v", err)
				}
				s.Close()
				return
			}
			if err == nil {
				t.Fatal("out-of-range config accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	t.Run("client ReceiveQueueSize", func(t *testing.T) {
		for _, n := range []int{-1, 3, 1 << 17} {
			_, err := NewClient(ClientConfig{ReceiveQueueSize: n})
			if err == nil {
				t.Fatalf("ReceiveQueueSize %d accepted", n)
			}
			for _, w := range []string{"ReceiveQueueSize", fmt.Sprint(n), "power of two", "1 to 65536"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		}
		if _, err := NewClient(ClientConfig{ReceiveQueueSize: 1 << 16}); err != nil {
			t.Fatalf("ReceiveQueueSize 65536 refused: %v", err)
		}
	})
}
