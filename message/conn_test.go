package message

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func mustNew(t testing.TB, cfg Config) *Conn {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pair moves one packet from a to b, acking it on a when ack is set.
func pass(t testing.TB, a, b *Conn, seq uint16, now time.Duration, ack bool) int {
	t.Helper()
	var buf [NetcodePayloadBytes]byte
	n := a.WritePacket(buf[:], seq, now)
	if err := b.ReadPacket(seq, buf[:n]); err != nil {
		t.Fatalf("ReadPacket %d: %v", seq, err)
	}
	if ack {
		a.Ack(seq)
	}
	return n
}

func TestRoundTripKinds(t *testing.T) {
	a, b := mustNew(t, DefaultConfig()), mustNew(t, DefaultConfig())
	for ch := range 3 {
		for k := range 5 {
			if err := a.Send(ch, []byte(fmt.Sprintf("c%d m%d", ch, k))); err != nil {
				t.Fatal(err)
			}
		}
	}
	pass(t, a, b, 0, 0, true)
	for ch := range 3 {
		for k := range 5 {
			msg, ok := b.Receive(ch)
			if want := fmt.Sprintf("c%d m%d", ch, k); !ok || string(msg) != want {
				t.Fatalf("channel %d message %d: got %q %v; want %q", ch, k, msg, ok, want)
			}
		}
		if msg, ok := b.Receive(ch); ok {
			t.Fatalf("channel %d: extra message %q", ch, msg)
		}
		if p := a.Pending(ch); p != 0 {
			t.Errorf("channel %d: %d pending after the ack; want 0", ch, p)
		}
	}
}

func TestEmptyPacketIsVersionByte(t *testing.T) {
	a := mustNew(t, DefaultConfig())
	var buf [64]byte
	if n := a.WritePacket(buf[:], 0, 0); n != 1 || buf[0] != Version {
		t.Fatalf("empty packet: %d bytes %x; want 1 byte %d", n, buf[:n], Version)
	}
	if n := a.WritePacket(nil, 1, 0); n != 0 {
		t.Fatalf("WritePacket(nil) = %d; want 0", n)
	}
}

func TestQueueFull(t *testing.T) {
	cfg := DefaultConfig()
	for i := range cfg.Channels {
		cfg.Channels[i].SendQueueSize = 4
	}
	a := mustNew(t, cfg)
	for ch := range 3 {
		for range 4 {
			if err := a.Send(ch, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Send(ch, []byte("x")); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("channel %d: fifth Send: %v; want ErrQueueFull", ch, err)
		}
	}
	if err := a.Send(0, make([]byte, DefaultMaxMessageSize+1)); err == nil || !strings.Contains(err.Error(), "at most 256") {
		t.Fatalf("oversized Send: %v; want an error naming 256", err)
	}
	if err := a.Send(3, nil); err == nil || !strings.Contains(err.Error(), "0 to 2") {
		t.Fatalf("Send on channel 3: %v; want an error naming 0 to 2", err)
	}
}

func TestResendAfterLoss(t *testing.T) {
	a, b := mustNew(t, DefaultConfig()), mustNew(t, DefaultConfig())
	a.SetRTT(100 * time.Millisecond)
	if err := a.Send(0, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	var buf [DefaultPacketBudget]byte
	if n := a.WritePacket(buf[:], 0, 0); n <= 1 {
		t.Fatal("first packet carried nothing")
	}
	// Lost. Not due again before 1.25 RTT:
	if n := a.WritePacket(buf[:], 1, 120*time.Millisecond); n != 1 {
		t.Fatalf("resent after 120 ms (%d bytes); want after 125 ms", n)
	}
	pass(t, a, b, 2, 125*time.Millisecond, true)
	if msg, ok := b.Receive(0); !ok || string(msg) != "hello" {
		t.Fatalf("got %q %v; want hello", msg, ok)
	}
	if s := a.Stats(); s.MessagesSent != 1 || s.MessagesResent != 1 {
		t.Fatalf("sent %d resent %d; want 1 and 1", s.MessagesSent, s.MessagesResent)
	}
}

func TestOrderedWaitsForGap(t *testing.T) {
	a, b := mustNew(t, DefaultConfig()), mustNew(t, DefaultConfig())
	var buf [DefaultPacketBudget]byte
	_ = a.Send(0, []byte("one"))
	a.WritePacket(buf[:], 0, 0) // lost
	_ = a.Send(0, []byte("two"))
	_ = a.Send(1, []byte("u"))
	pass(t, a, b, 1, time.Millisecond, true)
	if msg, ok := b.Receive(0); ok {
		t.Fatalf("ordered channel handed out %q before message 0", msg)
	}
	if msg, ok := b.Receive(1); !ok || string(msg) != "u" {
		t.Fatalf("unordered: got %q %v; want u", msg, ok)
	}
	pass(t, a, b, 2, time.Second, true)
	for _, want := range []string{"one", "two"} {
		if msg, ok := b.Receive(0); !ok || string(msg) != want {
			t.Fatalf("got %q %v; want %q", msg, ok, want)
		}
	}
}

func TestDuplicatePacket(t *testing.T) {
	a, b := mustNew(t, DefaultConfig()), mustNew(t, DefaultConfig())
	_ = a.Send(2, []byte("state"))
	var buf [DefaultPacketBudget]byte
	n := a.WritePacket(buf[:], 7, 0)
	if err := b.ReadPacket(7, buf[:n]); err != nil {
		t.Fatal(err)
	}
	if err := b.ReadPacket(7, buf[:n]); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second read: %v; want ErrDuplicate", err)
	}
	if err := b.ReadPacket(uint16(7+65536-windowBits), buf[:n]); err != nil {
		t.Fatalf("old read: %v; want nil", err)
	}
	b.Receive(2)
	if msg, ok := b.Receive(2); ok {
		t.Fatalf("unreliable message delivered twice: %q", msg)
	}
	if st := b.Stats(); st.StalePackets != 1 || st.UnreliableDropped != 1 {
		t.Fatalf("%d stale packets, %d unreliable dropped; want 1 and 1", st.StalePackets, st.UnreliableDropped)
	}
	// A stale packet's reliable messages are read: the packet layer
	// acked them.
	_ = a.Send(0, []byte("reliable"))
	n = a.WritePacket(buf[:], 8, 0)
	if err := b.ReadPacket(uint16(8+65536-windowBits), buf[:n]); err != nil {
		t.Fatal(err)
	}
	if msg, ok := b.Receive(0); !ok || string(msg) != "reliable" {
		t.Fatalf("stale packet's reliable message: %q %v", msg, ok)
	}
}

func TestBlockRoundTrip(t *testing.T) {
	a, b := mustNew(t, DefaultConfig()), mustNew(t, DefaultConfig())
	var seq uint16
	now := time.Duration(0)
	for _, size := range []int{1, 511, 512, 513, 5000, DefaultMaxBlockSize} {
		blk := pattern(size, byte(size))
		if err := a.SendBlock(0, blk); err != nil {
			t.Fatal(err)
		}
		_ = a.Send(0, []byte("after"))
		if err := a.SendBlock(0, blk); !errors.Is(err, ErrBlockBusy) {
			t.Fatalf("second block: %v; want ErrBlockBusy", err)
		}
		var got []byte
		for k := 0; k < 2000 && got == nil; k++ {
			seq++
			now += time.Millisecond
			pass(t, a, b, seq, now, true)
			if m, ok := b.Receive(0); ok {
				got = m
			}
		}
		if !bytes.Equal(got, blk) {
			t.Fatalf("block of %d: got %d bytes, not equal", size, len(got))
		}
		for range 3 { // the credit for the block, then the message
			seq++
			now += time.Millisecond
			pass(t, a, b, seq, now, true)
			pass(t, b, a, seq, now, true)
		}
		if m, ok := b.Receive(0); !ok || string(m) != "after" {
			t.Fatalf("after block %d: got %q %v; want after", size, m, ok)
		}
	}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7+i>>8)
	}
	return b
}

func TestConfigErrorsNameRanges(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Channels = nil }, "want 1 to 64"},
		{func(c *Config) { c.PacketBudget = 10 }, "PacketBudget is 10; want 64 to 65536"},
		{func(c *Config) { c.Channels[0].MaxMessageSize = 2000 }, "MaxMessageSize is 2000; want 1 to 1008"},
		{func(c *Config) { c.Channels[1].MaxBlockSize = 10 }, "ReliableOrdered channels only"},
		{func(c *Config) { c.Channels[0].Sequenced = true }, "Unreliable channels only"},
		{func(c *Config) { c.Channels[0].SendQueueSize = 1 << 15 }, "want 1 to 16384"},
		{func(c *Config) { c.Channels[0].BlockFragmentSize = 8 }, "BlockFragmentSize is 8; want 16 to 1008"},
	} {
		cfg := DefaultConfig()
		tc.mod(&cfg)
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v; want an error containing %q", err, tc.want)
		}
	}
}
