package message

import (
	"errors"
	"testing"
	"time"
)

// link moves packets a→b and b→a with their acks, without loss, one
// round per call.
func round(t *testing.T, a, b *Conn, seq *uint16, now time.Duration) (ab int) {
	t.Helper()
	*seq++
	ab = pass(t, a, b, *seq, now, true)
	pass(t, b, a, *seq, now, true)
	return ab
}

// TestBlockDoesNotBlockOtherChannels: while a 256 KiB block goes out on
// channel 0, every packet still carries channel 1's and 2's messages,
// and channel 0's messages queued after the block wait for it.
func TestBlockDoesNotBlockOtherChannels(t *testing.T) {
	a, b := mustNew(t, DefaultConfig()), mustNew(t, DefaultConfig())
	if err := a.SendBlock(0, pattern(DefaultMaxBlockSize, 9)); err != nil {
		t.Fatal(err)
	}
	_ = a.Send(0, []byte("after the block"))
	var seq uint16
	blockAt := -1
	for k := 0; k < 1000 && blockAt < 0; k++ {
		_ = a.Send(1, []byte("u"))
		_ = a.Send(2, []byte("s"))
		round(t, a, b, &seq, time.Duration(k)*time.Millisecond)
		for _, ch := range []int{1, 2} {
			if m, ok := b.Receive(ch); !ok || len(m) != 1 {
				t.Fatalf("packet %d: channel %d's message did not arrive beside the block", k, ch)
			}
		}
		if m, ok := b.Receive(0); ok {
			if len(m) != DefaultMaxBlockSize {
				t.Fatalf("channel 0 handed out %q before the block", m)
			}
			blockAt = k
		}
	}
	if blockAt < 0 {
		t.Fatal("the block did not arrive in 1,000 packets")
	}
	for k := 0; k < 5; k++ {
		round(t, a, b, &seq, time.Second+time.Duration(k)*time.Millisecond)
	}
	if m, ok := b.Receive(0); !ok || string(m) != "after the block" {
		t.Fatalf("after the block: %q %v", m, ok)
	}
	t.Logf("256 KiB block in %d packets of %d bytes", blockAt+1, DefaultPacketBudget)
}

// TestChannelBudgetAndPriority: a channel takes at most its PacketBudget
// of a packet, and the channel of lower Priority is filled first.
func TestChannelBudgetAndPriority(t *testing.T) {
	cfg := Config{PacketBudget: 300, Channels: []ChannelConfig{
		{Kind: ReliableOrdered, Priority: 2, MaxMessageSize: 50, PacketBudget: 100},
		{Kind: Unreliable, Priority: 1, MaxMessageSize: 50},
	}}
	a := mustNew(t, cfg)
	for range 20 {
		_ = a.Send(0, make([]byte, 40))
		_ = a.Send(1, make([]byte, 40))
	}
	var buf [300]byte
	n := a.WritePacket(buf[:], 0, 0)
	if n > 300 {
		t.Fatalf("%d bytes; budget 300", n)
	}
	// The unreliable channel goes first and takes what it can: 7 of 41
	// bytes after the version and its 3-byte header (291 bytes); 9 bytes
	// are left for the ordered channel, too few for one of its messages.
	if p := a.Pending(1); p != 20-7 {
		t.Fatalf("unreliable: %d left; want 13 (7 sent)", p)
	}
	b := mustNew(t, cfg)
	if err := b.ReadPacket(0, buf[:n]); err != nil {
		t.Fatal(err)
	}
	if got := b.Stats().MessagesReceived; got != 7 {
		t.Fatalf("%d messages in the packet; want the 7 unreliable", got)
	}
	// Alone, the ordered channel still stops at its 100 bytes.
	c := mustNew(t, cfg)
	for range 20 {
		_ = c.Send(0, make([]byte, 40))
	}
	if n := c.WritePacket(buf[:], 0, 0); n > 1+100 {
		t.Fatalf("ordered channel alone wrote %d bytes; its budget is 100", n)
	}
}

// TestCreditBackpressure: a receiver that does not read a reliable
// channel stops its sender at ReceiveQueueSize messages in flight; the
// sender's queue fills and Send says so; nothing is lost, and reading
// lets the rest through.
func TestCreditBackpressure(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Channels[0].SendQueueSize = 64
	cfg.Channels[0].ReceiveQueueSize = 16
	a, b := mustNew(t, cfg), mustNew(t, cfg)
	var seq uint16
	sent := 0
	for k := 0; k < 200; k++ {
		for a.Send(0, []byte{byte(sent)}) == nil {
			sent++
		}
		round(t, a, b, &seq, time.Duration(k)*time.Millisecond)
	}
	if sent != 64+16 {
		t.Fatalf("sent %d before the queue filled; want 80 (16 to the unread receiver, 64 queued)", sent)
	}
	if err := a.Send(0, []byte{0}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("Send: %v; want ErrQueueFull", err)
	}
	if st := b.Stats(); st.Refused != 0 || st.MessagesReceived != 16 {
		t.Fatalf("receiver: %d received, %d refused; want 16 and 0", st.MessagesReceived, st.Refused)
	}
	got := 0
	for k := 0; k < 200 && got < sent; k++ {
		for m, ok := b.Receive(0); ok; m, ok = b.Receive(0) {
			if m[0] != byte(got) {
				t.Fatalf("message %d: got %d", got, m[0])
			}
			got++
		}
		round(t, a, b, &seq, time.Second+time.Duration(k)*time.Millisecond)
	}
	if got != sent {
		t.Fatalf("read %d of %d", got, sent)
	}
}

// TestSequencedDropsOlder: a sequenced unreliable channel keeps only
// messages newer than the newest it took.
func TestSequencedDropsOlder(t *testing.T) {
	cfg := Config{Channels: []ChannelConfig{{Kind: Unreliable, Sequenced: true}}}
	a, b := mustNew(t, cfg), mustNew(t, cfg)
	var p [3][DefaultPacketBudget]byte
	var n [3]int
	for k := range 3 {
		_ = a.Send(0, []byte{byte(k)})
		n[k] = a.WritePacket(p[k][:], uint16(k), 0)
	}
	for _, k := range []int{0, 2, 1} { // 1 arrives after 2
		if err := b.ReadPacket(uint16(k), p[k][:n[k]]); err != nil {
			t.Fatal(err)
		}
	}
	var got []byte
	for m, ok := b.Receive(0); ok; m, ok = b.Receive(0) {
		got = append(got, m[0])
	}
	if string(got) != "\x00\x02" || b.Stats().UnreliableDropped != 1 {
		t.Fatalf("got %v, %d dropped; want [0 2] and 1", got, b.Stats().UnreliableDropped)
	}
}

// TestResetReuses: a Conn reset for a new connection starts from id 0
// with nothing queued, and allocates nothing.
func TestResetReuses(t *testing.T) {
	a, b := mustNew(t, DefaultConfig()), mustNew(t, DefaultConfig())
	var seq uint16
	for k := range 10 {
		_ = a.Send(0, []byte("old"))
		_ = a.Send(2, []byte("old"))
		round(t, a, b, &seq, time.Duration(k)*time.Millisecond)
	}
	_ = a.Send(0, []byte("unsent"))
	if allocs := testing.AllocsPerRun(10, func() { a.Reset(); b.Reset() }); allocs != 0 {
		t.Fatalf("Reset: %v allocations", allocs)
	}
	if a.Pending(0) != 0 || a.Pending(2) != 0 {
		t.Fatal("Reset left messages queued")
	}
	if _, ok := b.Receive(0); ok {
		t.Fatal("Reset left messages to receive")
	}
	_ = a.Send(0, []byte("new"))
	seq = 0
	round(t, a, b, &seq, 0)
	if m, ok := b.Receive(0); !ok || string(m) != "new" {
		t.Fatalf("after Reset: %q %v; want new", m, ok)
	}
}

// TestSectionBeyondReceiveQueue: a receiver that has read messages whose
// acks the sender lost gives a credit past the sender's oldest unacked
// message, so one packet can carry more of a channel's messages than the
// receive queue holds (resends of read ones and new ones): it must be
// read, not refused.
func TestSectionBeyondReceiveQueue(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Channels[0].SendQueueSize, cfg.Channels[0].ReceiveQueueSize = 32, 8
	a, b := mustNew(t, cfg), mustNew(t, cfg)
	for k := range 8 {
		_ = a.Send(0, []byte{byte(k)})
	}
	pass(t, a, b, 1, 0, false) // acks lost
	for k := range 8 {
		if m, ok := b.Receive(0); !ok || m[0] != byte(k) {
			t.Fatalf("message %d: %v %v", k, m, ok)
		}
	}
	pass(t, b, a, 1, 0, true) // b's credit: 8
	for k := 8; k < 16; k++ {
		if err := a.Send(0, []byte{byte(k)}); err != nil {
			t.Fatal(err)
		}
	}
	var buf [DefaultPacketBudget]byte
	n := a.WritePacket(buf[:], 2, time.Second) // 0..7 due again, 8..15 new
	if err := b.ReadPacket(2, buf[:n]); err != nil {
		t.Fatalf("a packet of 16 messages for a queue of 8: %v", err)
	}
	for k := 8; k < 16; k++ {
		if m, ok := b.Receive(0); !ok || m[0] != byte(k) {
			t.Fatalf("message %d: %v %v", k, m, ok)
		}
	}
}

// TestBlockSharedBuffer: one block buffer goes to several connections
// at once without a copy, and is the caller's again once each reports
// it acked.
func TestBlockSharedBuffer(t *testing.T) {
	blob := pattern(10000, 5)
	var senders, receivers [3]*Conn
	for k := range senders {
		senders[k], receivers[k] = mustNew(t, DefaultConfig()), mustNew(t, DefaultConfig())
		if err := senders[k].SendBlock(0, blob); err != nil {
			t.Fatal(err)
		}
		if !senders[k].BlockInFlight(0) {
			t.Fatal("BlockInFlight false right after SendBlock")
		}
	}
	for k := range senders {
		var seq uint16
		var got []byte
		for r := 0; r < 100 && (got == nil || senders[k].BlockInFlight(0)); r++ {
			round(t, senders[k], receivers[k], &seq, time.Duration(r)*time.Millisecond)
			if m, ok := receivers[k].Receive(0); ok {
				got = m
			}
		}
		if string(got) != string(blob) {
			t.Fatalf("connection %d: block differs", k)
		}
		if senders[k].BlockInFlight(0) {
			t.Fatalf("connection %d: block still in flight after it arrived and was acked", k)
		}
	}
	// Blocks cost a Conn one buffer, to receive into.
	noBlocks := DefaultConfig()
	noBlocks.Channels[0].MaxBlockSize = 0
	if d := senders[0].Footprint() - mustNew(t, noBlocks).Footprint(); d > DefaultMaxBlockSize+16<<10 {
		t.Errorf("blocks cost %d bytes a Conn; want one %d-byte buffer and bookkeeping", d, DefaultMaxBlockSize)
	}
}
