package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/netcode-go/netcode/codec"
)

// The steady-state paths allocate nothing.

// srvConnected returns a harness with n confirmed clients that never time
// out, writing to a conn that discards.
func srvConnected(t *testing.T, n int) (*srvHarness, []*srvPeer) {
	t.Helper()
	h := newSrvHarness(t, ServerConfig{MaxClients: n, AllowNoTimeoutTokens: true})
	var peers []*srvPeer
	for k := range n {
		p := h.peer(fmt.Sprintf("192.0.2.%d:5000", 1+k), uint64(1+k), func(tp *TokenParams) { tp.TimeoutSeconds = -1 })
		p.connect()
		p.send(p.keepAlive()) // confirm
		peers = append(peers, p)
	}
	h.conns[0].Discard = true
	return h, peers
}

func TestServerAllocsPayloadIntoQueue(t *testing.T) {
	h, peers := srvConnected(t, 1)
	p := peers[0]
	buf := make([]byte, codec.MaxPacketBytes)
	payload := make([]byte, 200)
	dst := make([]byte, codec.MaxPayloadBytes)
	handle := func(ev *Event) { copy(dst, ev.Payload) }
	allocs := testing.AllocsPerRun(1000, func() {
		n, err := codec.WritePayloadPacket(buf, p.next(), payload, p.seal)
		if err != nil {
			t.Fatal(err)
		}
		h.s.shard0().processPacket(buf[:n], p.addr, h.now)
		if h.s.Poll(handle) != 1 {
			t.Fatal("payload not queued")
		}
	})
	if allocs != 0 {
		t.Fatalf("processing a payload allocates %v times", allocs)
	}
}

func TestServerAllocsPoll(t *testing.T) {
	h, peers := srvConnected(t, 1)
	i := peers[0].index
	payload := make([]byte, 100)
	n := 0
	handle := func(ev *Event) { n = len(ev.Payload) }
	sh := h.s.shard0()
	allocs := testing.AllocsPerRun(1000, func() {
		sh.deliver(int32(i), payload, 1)
		if h.s.Poll(handle) != 1 || n != 100 {
			t.Fatal("nothing polled")
		}
	})
	if allocs != 0 {
		t.Fatalf("Poll allocates %v times", allocs)
	}
}

func TestServerAllocsSendPacket(t *testing.T) {
	h, peers := srvConnected(t, 1)
	i := peers[0].index
	payload := make([]byte, codec.MaxPayloadBytes)
	allocs := testing.AllocsPerRun(1000, func() {
		if err := h.s.SendPacket(i, payload); err != nil {
			t.Fatal(err)
		}
		h.s.Flush()
	})
	if allocs != 0 {
		t.Fatalf("SendPacket+Flush allocates %v times", allocs)
	}
}

func TestServerAllocsKeepAliveTick(t *testing.T) {
	h, _ := srvConnected(t, 32)
	before := h.s.Stats().PacketsOut
	allocs := testing.AllocsPerRun(100, func() {
		h.step(PacketSendInterval) // a keep-alive to every slot
	})
	if allocs != 0 {
		t.Fatalf("Update with keep-alives to 32 clients allocates %v times", allocs)
	}
	if sent := h.s.Stats().PacketsOut - before; sent < 100*32 {
		t.Fatalf("%d keep-alives sent in 101 ticks to 32 clients", sent)
	}
	_ = time.Second
}
