package engine

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

// flood makes conn a socket under a flood that never drains: once the
// real datagrams are read, every read fills its batch with junk from
// addresses in 198.51.100.0/24.
func flood(conn *batchiotest.Conn, junk []byte) {
	k := 0
	conn.Generate = func(buf []byte) (int, netip.AddrPort, bool) {
		k++
		return copy(buf, junk), netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(k)}), 9999), true
	}
}

// TestFloodDoesNotStarveTimers: while a flood of bad requests never lets
// the socket drain, each Update still returns after bounded work, a
// connected client still gets its keep-alives at 10 Hz and a payload sent by
// the application still goes out in the same Update.
func TestFloodDoesNotStarveTimers(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	p := h.peer("192.0.2.8:1000", 4, nil)
	i := p.connect()
	p.send(p.keepAlive())
	p.received()

	bad := h.peer("198.51.100.1:1", 5, nil).request()
	bad[len(bad)-1] ^= 1 // the token's tag: fails only at the XChaCha20 open
	flood(h.conns[0], bad)

	keepAlives, payloads := 0, 0
	for step := range 100 { // one second of fake time, 10 ms apart
		reads := h.conns[0].Stats().ReadCalls
		h.step(10 * time.Millisecond)
		if got := h.conns[0].Stats().ReadCalls - reads; got > recvBatchesManual {
			t.Fatalf("Update read %d batches from a flooding socket, bound %d", got, recvBatchesManual)
		}
		if step == 50 {
			if err := h.s.SendPacket(i, []byte("state")); err != nil {
				t.Fatal(err)
			}
			h.s.Flush()
		}
		for _, pkt := range p.received() {
			switch pkt.Type {
			case codec.ConnectionKeepAlive:
				keepAlives++
			case codec.ConnectionPayload:
				payloads++
			}
		}
	}
	if payloads != 1 {
		t.Fatalf("the application's payload arrived %d times under the flood, want 1", payloads)
	}
	if keepAlives < 9 {
		t.Fatalf("%d keep-alives in a flooded second, want about 10", keepAlives)
	}
	decrypted := h.codecDrops(codec.ReasonTokenDecrypt)
	if drops := decrypted + h.drops(ServerDropRequestRate); drops < 100*recvBatchesManual*recvBatchSize/2 {
		t.Fatalf("only %d flood packets processed", drops)
	}
	// One second of flood: the budget's rate plus its initial burst.
	if limit := uint64(DefaultTokenDecryptsPerSecond + DefaultTokenDecryptsPerSecond/8); decrypted > limit {
		t.Fatalf("%d connect tokens decrypted in a flooded second, budget %d", decrypted, limit)
	}
	if !h.s.slotConnected(i) {
		t.Fatal("the client timed out under the flood")
	}
}
