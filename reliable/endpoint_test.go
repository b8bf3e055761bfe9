package reliable_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/netcode-go/netcode/reliable"
)

func mustNew(t testing.TB, c reliable.Config, pool *reliable.Pool) *reliable.Endpoint {
	t.Helper()
	e, err := reliable.New(c, pool)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustSend(t testing.TB, e *reliable.Endpoint, payload []byte) [][]byte {
	t.Helper()
	p, err := e.Send(payload)
	if err != nil {
		t.Fatal(err)
	}
	return datagrams(t, p)
}

func TestSendTooLargeUsesNoSequence(t *testing.T) {
	c := reliable.DefaultConfig()
	c.MaxFragments = 2 // MaxPacketSize needs 16: Send must refuse, not panic
	e := mustNew(t, c, nil)
	for _, n := range []int{c.MaxPacketSize + 1, 2*c.FragmentSize + 1} {
		p, err := e.Send(make([]byte, n))
		if !errors.Is(err, reliable.ErrPacketTooLarge) || p.Datagrams() != 0 {
			t.Errorf("Send(%d bytes) = %d datagrams, %v", n, p.Datagrams(), err)
		}
	}
	if e.NextSequence() != 0 || e.Counters()[reliable.PacketsTooLargeToSend] != 2 {
		t.Errorf("next sequence %d, counters %v", e.NextSequence(), e.Counters())
	}
	if dgs := mustSend(t, e, make([]byte, 2*c.FragmentSize)); len(dgs) != 2 {
		t.Errorf("%d datagrams, want 2", len(dgs))
	}
}

func TestEmptyPayloadIsHeaderOnly(t *testing.T) {
	a, b := mustNew(t, reliable.DefaultConfig(), nil), mustNew(t, reliable.DefaultConfig(), nil)
	dgs := mustSend(t, a, nil)
	if len(dgs) != 1 || len(dgs[0]) != 8 {
		t.Fatalf("datagrams %x", dgs)
	}
	d, r := b.Receive(dgs[0])
	if !d.Delivered || len(d.Payload) != 0 || r != reliable.DropNone {
		t.Fatalf("Receive = %+v, %v", d, r)
	}
}

func TestPacketWriteDatagram(t *testing.T) {
	var zero reliable.Packet
	if zero.Datagrams() != 0 || zero.DatagramLen(0) != 0 {
		t.Error("zero Packet has datagrams")
	}
	if _, err := zero.WriteDatagram(0, make([]byte, 100)); !errors.Is(err, reliable.ErrNoDatagram) {
		t.Errorf("zero Packet: %v", err)
	}
	e := mustNew(t, reliable.DefaultConfig(), nil)
	p, _ := e.Send(make([]byte, 2500))
	if p.Datagrams() != 3 || p.Fragments() != 3 {
		t.Fatalf("%d datagrams", p.Datagrams())
	}
	for i, want := range []int{5 + 8 + 1024, 5 + 1024, 5 + 452} {
		if got := p.DatagramLen(i); got != want {
			t.Errorf("DatagramLen(%d) = %d, want %d", i, got, want)
		}
		if _, err := p.WriteDatagram(i, make([]byte, want-1)); !errors.Is(err, reliable.ErrBufferTooSmall) {
			t.Errorf("short buffer: %v", err)
		}
	}
	for _, i := range []int{-1, 3} {
		if _, err := p.WriteDatagram(i, make([]byte, 2000)); !errors.Is(err, reliable.ErrNoDatagram) {
			t.Errorf("WriteDatagram(%d): %v", i, err)
		}
	}
	if c := reliable.DefaultConfig(); c.MaxDatagramBytes() != 5+9+1024 {
		t.Errorf("MaxDatagramBytes = %d", c.MaxDatagramBytes())
	}
}

// TestRefuse: a refused packet is never acked, and its header's acks are
// not processed; Refuse only works right after the delivery.
func TestRefuse(t *testing.T) {
	a, b := mustNew(t, reliable.DefaultConfig(), nil), mustNew(t, reliable.DefaultConfig(), nil)
	d0 := mustSend(t, a, []byte("zero"))
	d1 := mustSend(t, a, []byte("one"))
	if d, _ := b.Receive(d0[0]); !d.Delivered || !b.Refuse() {
		t.Fatal("refusing packet 0 failed")
	}
	if b.Refuse() {
		t.Error("Refuse twice returned true")
	}
	if d, _ := b.Receive(d1[0]); !d.Delivered {
		t.Fatal("packet 1 not delivered")
	}
	b.Counters() // any call records packet 1
	if b.Refuse() {
		t.Error("Refuse after another call returned true")
	}
	// Packet 0 is not a duplicate: it was never recorded.
	if d, r := b.Receive(d0[0]); !d.Delivered {
		t.Fatalf("packet 0 again: %v", r)
	}
	back := mustSend(t, b, []byte("ack"))
	a.Receive(back[0])
	if got := a.Acks(); !slices.Equal(got, []uint16{1, 0}) {
		t.Errorf("acks %v, want [1 0]", got)
	}

	// A refused packet's acks are not processed.
	c := mustNew(t, reliable.DefaultConfig(), nil)
	x := mustSend(t, c, []byte("x"))
	a.Receive(x[0])
	y := mustSend(t, a, []byte("y"))
	c.Receive(y[0])
	c.Refuse()
	if len(c.Acks()) != 0 || c.Counters()[reliable.PacketsAcked] != 0 {
		t.Errorf("refused packet's acks processed: %v", c.Acks())
	}
}

func TestAcksBounded(t *testing.T) {
	c := reliable.DefaultConfig()
	c.AckBufferSize = 3
	a, b := mustNew(t, c, nil), mustNew(t, c, nil)
	for range 5 {
		b.Receive(mustSend(t, a, []byte{1})[0])
	}
	a.Receive(mustSend(t, b, []byte{2})[0])
	if got := a.Acks(); !slices.Equal(got, []uint16{4, 3, 2}) {
		t.Fatalf("acks %v, want [4 3 2]", got)
	}
	a.ClearAcks()
	// The two that did not fit are still unacked: the next packet acks them.
	a.Receive(mustSend(t, b, []byte{3})[0])
	if got := a.Acks(); !slices.Equal(got, []uint16{1, 0}) {
		t.Fatalf("acks %v, want [1 0]", got)
	}
}

func TestReassemblyDeliveryValidUntilNextReceive(t *testing.T) {
	a, b := mustNew(t, reliable.DefaultConfig(), nil), mustNew(t, reliable.DefaultConfig(), nil)
	payload := payloadRule(7, 4000)
	dgs := mustSend(t, a, payload)
	var d reliable.Delivery
	for _, dg := range dgs {
		d, _ = b.Receive(dg)
	}
	if !d.Delivered || d.Fragments != 4 || !bytes.Equal(d.Payload, payload) {
		t.Fatalf("delivered %v, %d fragments, %d bytes", d.Delivered, d.Fragments, len(d.Payload))
	}
	if b.PoolBuffers() != 1 {
		t.Errorf("holding %d buffers, want 1 (the delivery's)", b.PoolBuffers())
	}
	b.Receive(mustSend(t, a, []byte{1})[0])
	if b.PoolBuffers() != 0 {
		t.Errorf("holding %d buffers after the next Receive", b.PoolBuffers())
	}
}

func TestResetKeepsEstimates(t *testing.T) {
	a, b := mustNew(t, reliable.DefaultConfig(), nil), mustNew(t, reliable.DefaultConfig(), nil)
	a.UpdateSeconds(1)
	b.UpdateSeconds(1)
	b.Receive(mustSend(t, a, []byte{1})[0])
	b.Receive(mustSend(t, a, make([]byte, 3000))[0]) // one fragment held
	a.UpdateSeconds(1.05)
	b.UpdateSeconds(1.05)
	a.Receive(mustSend(t, b, []byte{2})[0])
	a.UpdateSeconds(1.1)
	rtt := a.Stats().RTT
	if rtt != 50 {
		t.Fatalf("RTT %v, want 50", rtt)
	}
	a.Reset()
	b.Reset()
	if a.NextSequence() != 0 || a.Counters() != (reliable.Counters{}) || len(a.Acks()) != 0 || b.PoolBuffers() != 0 {
		t.Errorf("after Reset: sequence %d counters %v acks %v buffers %d", a.NextSequence(), a.Counters(), a.Acks(), b.PoolBuffers())
	}
	if a.Stats().RTT != rtt || a.Stats().RTTMin != 50 {
		t.Errorf("Reset cleared the estimates: %+v", a.Stats())
	}
}

// TestRefuseReassembled: a refused reassembled packet is forgotten, like
// the C library's: its fragments sent again deliver it again.
func TestRefuseReassembled(t *testing.T) {
	a, b := mustNew(t, reliable.DefaultConfig(), nil), mustNew(t, reliable.DefaultConfig(), nil)
	payload := payloadRule(3, 2500)
	dgs := mustSend(t, a, payload)
	for round := range 2 {
		var d reliable.Delivery
		for _, dg := range dgs {
			d, _ = b.Receive(dg)
		}
		if !d.Delivered || !bytes.Equal(d.Payload, payload) {
			t.Fatalf("round %d: not delivered", round)
		}
		if round == 0 && !b.Refuse() {
			t.Fatal("Refuse after a reassembled delivery returned false")
		}
	}
	if _, r := b.Receive(dgs[1]); r != reliable.DropFragmentOfReceivedPacket {
		t.Errorf("fragment of the accepted packet: %v", r)
	}
}

// TestOddBufferSizes: window sizes that do not divide 65536 index by
// division (the C library's arithmetic), across the sequence wrap.
func TestOddBufferSizes(t *testing.T) {
	c := reliable.DefaultConfig()
	c.SentPacketsBufferSize, c.ReceivedPacketsBufferSize, c.FragmentReassemblyBufferSize = 100, 77, 5
	c.RTTHistorySize, c.AckBufferSize = 33, 7
	a, b := mustNew(t, c, nil), mustNew(t, c, nil)
	for i := range 66000 {
		size := 10
		if i%50 == 0 {
			size = 3000
		}
		payload := payloadRule(uint64(i), size)
		var d reliable.Delivery
		for _, dg := range mustSend(t, a, payload) {
			d, _ = b.Receive(dg)
		}
		if !d.Delivered || !bytes.Equal(d.Payload, payload) {
			t.Fatalf("packet %d not delivered", i)
		}
		if _, r := b.Receive(nil); r != reliable.DropHeaderTruncated {
			t.Fatalf("empty datagram: %v", r)
		}
		a.Receive(mustSend(t, b, []byte{1})[0])
		if got := a.Acks(); len(got) != 1 || got[0] != uint16(i) {
			t.Fatalf("packet %d: acks %v", i, got)
		}
		a.ClearAcks()
	}
}
