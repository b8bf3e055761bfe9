package message

import (
	"testing"
	"time"
)

// TestAllocs: sending, packing, acking and receiving messages allocate
// nothing once a Conn is made.
func TestAllocs(t *testing.T) {
	cfg := DefaultConfig()
	for i := range cfg.Channels {
		cfg.Channels[i].SendQueueSize = 1 << 14
		cfg.Channels[i].ReceiveQueueSize = 1 << 14
	}
	a, b := mustNew(t, cfg), mustNew(t, cfg)
	msg := make([]byte, 16)
	const runs = 200

	send := testing.AllocsPerRun(runs, func() {
		for ch := range 3 {
			for range 15 {
				if err := a.Send(ch, msg); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	var packets [runs + 1][DefaultPacketBudget]byte
	var lens [runs + 1]int
	var seq uint16
	// All at time 0: nothing is due for a resend while unacked.
	pack := testing.AllocsPerRun(runs, func() {
		lens[seq] = a.WritePacket(packets[seq][:], seq, 0)
		seq++
	})
	if lens[0] < DefaultPacketBudget-40 {
		t.Fatalf("first packet has %d bytes; want it full", lens[0])
	}
	seq = 0
	receive := testing.AllocsPerRun(runs, func() {
		if err := b.ReadPacket(seq, packets[seq][:lens[seq]]); err != nil {
			t.Fatal(err)
		}
		for ch := range 3 {
			for _, ok := b.Receive(ch); ok; _, ok = b.Receive(ch) {
			}
		}
		seq++
	})
	seq = 0
	ack := testing.AllocsPerRun(runs, func() {
		a.Ack(seq)
		seq++
	})
	if got := b.Stats().MessagesReceived; got != (runs+1)*45 {
		t.Fatalf("received %d messages; want %d", got, (runs+1)*45)
	}
	if p := a.Pending(0) + a.Pending(1) + a.Pending(2); p != 0 {
		t.Fatalf("%d messages pending after every packet was acked", p)
	}
	for name, v := range map[string]float64{"send": send, "pack": pack, "receive": receive, "ack": ack} {
		if v != 0 {
			t.Errorf("%s: %v allocations per run; want 0", name, v)
		}
	}
}

// TestBlockAllocs: a block sent, packed, acked and received allocates
// nothing either.
func TestBlockAllocs(t *testing.T) {
	a, b := mustNew(t, DefaultConfig()), mustNew(t, DefaultConfig())
	blk := pattern(20000, 3)
	var buf [DefaultPacketBudget]byte
	var seq uint16
	allocs := testing.AllocsPerRun(20, func() {
		if err := a.SendBlock(0, blk); err != nil {
			t.Fatal(err)
		}
		got := false
		for k := 0; k < 100 && !got; k++ {
			seq++
			n := a.WritePacket(buf[:], seq, time.Duration(seq)*time.Millisecond)
			if err := b.ReadPacket(seq, buf[:n]); err != nil {
				t.Fatal(err)
			}
			a.Ack(seq)
			_, got = b.Receive(0)
			n = b.WritePacket(buf[:], seq, time.Duration(seq)*time.Millisecond)
			if err := a.ReadPacket(seq, buf[:n]); err != nil {
				t.Fatal(err)
			}
			b.Ack(seq)
		}
		if !got {
			t.Fatal("block not received in 100 packets")
		}
		for k := 0; k < 5 && a.Pending(0) > 0; k++ { // the last acks
			seq++
			n := a.WritePacket(buf[:], seq, time.Duration(seq)*time.Millisecond)
			_ = b.ReadPacket(seq, buf[:n])
			a.Ack(seq)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per block; want 0", allocs)
	}
}
