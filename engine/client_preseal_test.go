package engine

import (
	"errors"
	"slices"
	"testing"

	"github.com/netcode-go/netcode/codec"
)

// TestSealAhead: packets sealed ahead open at the server with their
// reserved sequences, keep-alives sent while they wait take sequences
// below the block, the counter jumps over the block, and no sequence is
// ever sealed twice (the AEAD nonce).
func TestSealAhead(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctAccept)
	tok := h.token(10, 30)
	h.connected(tok)
	srv := h.servers[0]
	if err := h.client.ReserveSequences(4, 3); err != nil {
		t.Fatal(err)
	}
	var sealed [][]byte
	for i := range 3 {
		buf := make([]byte, codec.MaxPacketBytes)
		n, err := h.client.SealNext(buf, []byte{byte(i + 1), 7, 7})
		if err != nil {
			t.Fatal(err)
		}
		sealed = append(sealed, buf[:n])
	}
	if _, err := h.client.SealNext(make([]byte, codec.MaxPacketBytes), []byte{9}); !errors.Is(err, ErrSealAhead) {
		t.Fatalf("a fourth SealNext of a block of 3: %v; want ErrSealAhead", err)
	}
	srv.seqs = nil
	// Keep-alives while the sealed packets wait: 6 of them, the first 4
	// below the block, the rest jump over it.
	for range 6 {
		h.step(PacketSendInterval)
	}
	for _, p := range sealed {
		if err := h.client.SendSealed(p); err != nil {
			t.Fatal(err)
		}
	}
	h.client.Flush()
	h.deliver()
	if srv.rejected != 0 {
		t.Fatalf("server rejected %d packets", srv.rejected)
	}
	if got := len(srv.payloads); got != 3 || srv.payloads[2][0] != 3 {
		t.Fatalf("server got payloads %v; want the 3 sealed", srv.payloads)
	}
	if slices.ContainsFunc(srv.seqs[:4], func(s uint64) bool { return s >= srv.seqs[6] }) {
		t.Fatalf("sequences %v: a keep-alive before the block is not below it", srv.seqs)
	}
	seen := map[uint64]bool{}
	for _, s := range srv.seqs {
		if seen[s] {
			t.Fatalf("sequence %d used twice: %v", s, srv.seqs)
		}
		seen[s] = true
	}
	// The sealed packets' sequences are the block's: gap 4 after the
	// next sequence at the reservation, which the first keep-alive took.
	first := srv.seqs[0] + 4
	if want := []uint64{first, first + 1, first + 2}; !slices.Equal(srv.seqs[6:], want) {
		t.Fatalf("sealed packets' sequences %v; want %v (all %v)", srv.seqs[6:], want, srv.seqs)
	}
	if srv.seqs[4] != first+3 {
		t.Fatalf("the fifth keep-alive took %d; want %d, past the block", srv.seqs[4], first+3)
	}

	// After the sealed packets, the client's own are past the block.
	srv.seqs = nil
	h.step(2 * PacketSendInterval)
	if len(srv.seqs) == 0 || srv.seqs[0] < first+3 {
		t.Fatalf("keep-alive after the sealed packets: sequences %v; want past %d", srv.seqs, first+2)
	}

	// A session with the same token later starts above the block.
	h.client.Disconnect(h.now)
	h.deliver()
	srv.recvKey, srv.seqs = nil, nil
	h.connected(tok)
	if len(srv.seqs) == 0 || srv.seqs[0] < first+3 {
		t.Fatalf("the next session's first sequence %v is not above the block %d..%d", srv.seqs, first, first+2)
	}
}

// TestSealAheadRecorded: a block reserved (and sealed) but never reached
// by the counter still moves the token's next sequence past it.
func TestSealAheadRecorded(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctAccept)
	tok := h.token(10, 30)
	h.connected(tok)
	srv := h.servers[0]
	if err := h.client.ReserveSequences(200, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.SealNext(make([]byte, codec.MaxPacketBytes), []byte{1}); err != nil {
		t.Fatal(err)
	}
	at := srv.seqs[len(srv.seqs)-1]
	h.client.Disconnect(h.now)
	h.deliver()
	srv.recvKey, srv.seqs = nil, nil
	h.connected(tok)
	if len(srv.seqs) == 0 || srv.seqs[0] < at+200+2 {
		t.Fatalf("the next session's first sequence %v is not past the block from about %d", srv.seqs, at+200)
	}
}

func TestSealAheadRefused(t *testing.T) {
	h := newClientHarness(t, ClientConfig{}, ctAccept)
	if err := h.client.ReserveSequences(0, 1); !errors.Is(err, ErrClientNotConnected) {
		t.Fatalf("ReserveSequences before connecting: %v", err)
	}
	h.connected(h.token(10, 30))
	for _, c := range []struct{ gap, n int }{{-1, 1}, {0, 0}, {1025, 1}, {0, MaxReservedSequences + 1}} {
		if err := h.client.ReserveSequences(c.gap, c.n); !errors.Is(err, ErrSealAhead) {
			t.Errorf("ReserveSequences(%d, %d): %v; want ErrSealAhead", c.gap, c.n, err)
		}
	}
	if _, err := h.client.SealNext(make([]byte, 64), []byte{1}); !errors.Is(err, ErrSealAhead) {
		t.Fatalf("SealNext without a block: %v", err)
	}
	if err := h.client.SendSealed(nil); !errors.Is(err, ErrSealAhead) {
		t.Fatalf("SendSealed(nil): %v", err)
	}
}

// TestSealAheadSentJumps: once a sealed packet is sent, the client's own
// packets take sequences past the block at once, not when the counter
// reaches it (a server that saw the block would drop them as replays).
func TestSealAheadSentJumps(t *testing.T) {
	h, srv, sealed := sealedOne(t)
	if err := h.client.SendSealed(sealed); err != nil {
		t.Fatal(err)
	}
	srv.seqs = nil
	h.step(2 * PacketSendInterval)
	if len(srv.seqs) < 2 || srv.seqs[1] <= srv.seqs[0] {
		t.Fatalf("sequences after the sealed packet %v; want the keep-alive past it", srv.seqs)
	}
}

// TestSealAheadSentByCaller: a sealed packet the caller sends itself
// (SentSealed) counts as activity, so no keep-alive goes out in the same
// interval, moves the client's own packets past the block and is counted
// as sent.
func TestSealAheadSentByCaller(t *testing.T) {
	h, srv, sealed := sealedOne(t)
	if err := h.client.SentSealed(nil); !errors.Is(err, ErrSealAhead) {
		t.Fatalf("SentSealed(nil): %v; want ErrSealAhead", err)
	}
	h.step(PacketSendInterval) // a keep-alive goes out
	h.step(PacketSendInterval * 9 / 10)
	out := h.client.Stats().PacketsOut
	srv.seqs = nil
	if err := h.client.SentSealed(sealed); err != nil {
		t.Fatal(err)
	}
	if got := h.client.Stats().PacketsOut; got != out+1 {
		t.Fatalf("PacketsOut %d after SentSealed; want %d", got, out+1)
	}
	// A keep-alive would be due 100 ms after the last one; the sealed
	// packet, 90 ms after it, moved that on.
	h.step(PacketSendInterval / 2)
	if len(srv.seqs) != 0 {
		t.Fatalf("keep-alive %v 50 ms after a sealed packet sent", srv.seqs)
	}
	h.step(PacketSendInterval)
	if len(srv.seqs) == 0 || srv.seqs[0] < h.client.res.end {
		t.Fatalf("keep-alive sequences %v after the sealed packet; want past the block's end %d", srv.seqs, h.client.res.end)
	}
}

// sealedOne connects a client and seals one packet 500 sequences ahead.
func sealedOne(t *testing.T) (*clientHarness, *ctServer, []byte) {
	t.Helper()
	h := newClientHarness(t, ClientConfig{}, ctAccept)
	h.connected(h.token(10, 30))
	if err := h.client.ReserveSequences(500, 1); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, codec.MaxPacketBytes)
	n, err := h.client.SealNext(buf, []byte{5})
	if err != nil {
		t.Fatal(err)
	}
	return h, h.servers[0], buf[:n]
}
