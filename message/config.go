package message

import (
	"fmt"
	"time"
)

// Kind is what a channel promises about its messages.
type Kind uint8

const (
	// ReliableOrdered delivers every message exactly once, in the order
	// sent. It alone carries blocks.
	ReliableOrdered Kind = iota
	// ReliableUnordered delivers every message exactly once, as it
	// arrives.
	ReliableUnordered
	// Unreliable sends every message once; it arrives at most once.
	Unreliable
)

var kindText = [...]string{"reliable-ordered", "reliable-unordered", "unreliable"}

func (k Kind) String() string {
	if int(k) < len(kindText) {
		return kindText[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

func (k Kind) reliable() bool { return k != Unreliable }

const (
	// NetcodePayloadBytes is netcode's payload limit.
	NetcodePayloadBytes = 1200
	// DefaultPacketBudget is the default packet size: reliable's default
	// FragmentAbove, so that a packet of messages is never fragmented by
	// the reliable layer and fits a netcode payload with its 9-byte
	// header. With a larger FragmentAbove use up to
	// NetcodePayloadBytes - 9.
	DefaultPacketBudget = 1024

	DefaultMaxMessageSize    = 256
	DefaultQueueSize         = 256
	DefaultResendFloor       = 20 * time.Millisecond
	DefaultBlockFragmentSize = 496
	DefaultMaxBlockSize      = 256 * 1024
	DefaultSentPackets       = 256
	DefaultStallTimeout      = 5 * time.Second
	DefaultInitialRTT        = 100 * time.Millisecond

	// maxChannels keeps a section tag in one or two bytes.
	maxChannels = 64
	// maxQueueSize keeps a window well inside half the 16-bit id space.
	maxQueueSize    = 1 << 14
	maxMessageLimit = 1 << 16
	maxBlockLimit   = 1 << 24
	minFragmentSize = 16
	maxFragments    = 1 << 16
	// sectionOverhead bounds a section's bytes beside one message's data:
	// tag, id, count, length (2 + 3 + 3 + 3) and a block's size (4).
	sectionOverhead = 15
)

// ChannelConfig configures one channel. Both sides of a connection must
// use the same channel configs (the receiver sizes its window, and checks
// lengths, by its own).
type ChannelConfig struct {
	Kind Kind
	// Sequenced (Unreliable only) drops a message older than the newest
	// received: state that only the latest of matters.
	Sequenced bool
	// Priority orders the channels when a packet is filled: lower first,
	// then by index.
	Priority int
	// MaxMessageSize is the largest message Send takes (0: default 256).
	MaxMessageSize int
	// SendQueueSize is the number of messages queued or in flight before
	// Send returns ErrQueueFull (0: default 256).
	SendQueueSize int
	// ReceiveQueueSize is the number of received messages held for
	// Receive (0: default 256). On a reliable channel it is also the
	// peer's window: at most this many messages past the last one read.
	ReceiveQueueSize int
	// PacketBudget bounds the bytes this channel takes of one packet
	// (0: whatever the channels before it left).
	PacketBudget int
	// ResendFloor is the least time before an unacked reliable message
	// is sent again (0: default 20 ms); the resend time is
	// max(ResendFloor, 1.25 × RTT).
	ResendFloor time.Duration
	// SingleResend sends an unacked reliable message once per resend
	// time. By default a resend goes in two consecutive packets, so that
	// one more loss does not cost another resend time: at 5% loss that
	// takes the ordered channel's p99 latency from 3 to under 2 RTT for
	// twice the resent bytes.
	SingleResend bool
	// MaxBlockSize (ReliableOrdered only) is the largest block SendBlock
	// takes; 0 turns blocks off.
	MaxBlockSize int
	// BlockFragmentSize is the data in each fragment of a block but the
	// last (0: default 496, two to a packet of the default budget).
	BlockFragmentSize int
}

// Config configures a Conn.
type Config struct {
	Channels []ChannelConfig
	// PacketBudget is the most bytes WritePacket writes (0: default
	// 1,024).
	PacketBudget int
	// SentPackets is the number of sent-packet records: a packet acked
	// after this many later packets has its messages resent instead
	// (0: default 256, reliable's own window).
	SentPackets int
	// StallTimeout: Stalled reports a peer that has acked nothing for
	// this long while packets were written to it (0: default 5 s).
	StallTimeout time.Duration
	// InitialRTT stands for the RTT until SetRTT gives a measured one, so
	// that the first messages are not resent every ResendFloor
	// (0: default 100 ms).
	InitialRTT time.Duration
}

// DefaultConfig returns a config with one channel of each kind: 0
// reliable-ordered (with blocks of up to 256 KiB), 1 reliable-unordered,
// 2 unreliable, filled unreliable first.
func DefaultConfig() Config {
	return Config{Channels: []ChannelConfig{
		{Kind: ReliableOrdered, Priority: 1, MaxBlockSize: DefaultMaxBlockSize},
		{Kind: ReliableUnordered, Priority: 1},
		{Kind: Unreliable, Priority: 0},
	}}
}

// normalize fills in defaults and checks every field, naming the allowed
// range of the first one out of it.
func (c *Config) normalize() error {
	if n := len(c.Channels); n < 1 || n > maxChannels {
		return fmt.Errorf("message: Config.Channels has %d channels; want 1 to %d", n, maxChannels)
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.PacketBudget, DefaultPacketBudget)
	def(&c.SentPackets, DefaultSentPackets)
	if c.StallTimeout == 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	if c.InitialRTT == 0 {
		c.InitialRTT = DefaultInitialRTT
	}
	if c.InitialRTT < 0 {
		return fmt.Errorf("message: Config.InitialRTT is %v; want > 0 (0 means %v)", c.InitialRTT, DefaultInitialRTT)
	}
	if err := checkRange("PacketBudget", c.PacketBudget, 64, 1<<16); err != nil {
		return err
	}
	if err := checkRange("SentPackets", c.SentPackets, 1, 1<<15); err != nil {
		return err
	}
	if c.StallTimeout < 0 {
		return fmt.Errorf("message: Config.StallTimeout is %v; want > 0 (0 means %v)", c.StallTimeout, DefaultStallTimeout)
	}
	chs := make([]ChannelConfig, len(c.Channels)) // the caller's may change
	copy(chs, c.Channels)
	c.Channels = chs
	for i := range chs {
		if err := chs[i].normalize(c.PacketBudget); err != nil {
			return fmt.Errorf("message: Config.Channels[%d]: %w", i, err)
		}
	}
	return nil
}

func (ch *ChannelConfig) normalize(packetBudget int) error {
	if ch.Kind > Unreliable {
		return fmt.Errorf("channel kind is %d; want ReliableOrdered, ReliableUnordered or Unreliable", ch.Kind)
	}
	if ch.Sequenced && ch.Kind != Unreliable {
		return fmt.Errorf("%s is set on a %v channel; want it on Unreliable channels only", "Sequenced", ch.Kind)
	}
	if ch.MaxBlockSize != 0 && ch.Kind != ReliableOrdered {
		return fmt.Errorf("%s is %d on a %v channel; want blocks on ReliableOrdered channels only", "MaxBlockSize", ch.MaxBlockSize, ch.Kind)
	}
	if ch.ResendFloor < 0 {
		return fmt.Errorf("%s is %v; want > 0 (0 means %v)", "ResendFloor", ch.ResendFloor, DefaultResendFloor)
	}
	if ch.ResendFloor == 0 {
		ch.ResendFloor = DefaultResendFloor
	}
	for _, f := range [...]struct {
		v *int
		d int
	}{
		{&ch.MaxMessageSize, DefaultMaxMessageSize},
		{&ch.SendQueueSize, DefaultQueueSize},
		{&ch.ReceiveQueueSize, DefaultQueueSize},
		{&ch.BlockFragmentSize, DefaultBlockFragmentSize},
	} {
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	budget := packetBudget
	if ch.PacketBudget != 0 {
		if err := checkRange("PacketBudget", ch.PacketBudget, 1, packetBudget); err != nil {
			return err
		}
		budget = ch.PacketBudget
	}
	// Every message must fit in an empty packet, or it would never leave.
	// (A packet starts with its version byte.)
	room := min(budget, packetBudget-1) - sectionOverhead
	if err := checkRange("MaxMessageSize", ch.MaxMessageSize, 1, min(room, maxMessageLimit)); err != nil {
		return err
	}
	if err := checkRange("SendQueueSize", ch.SendQueueSize, 1, maxQueueSize); err != nil {
		return err
	}
	if err := checkRange("ReceiveQueueSize", ch.ReceiveQueueSize, 1, maxQueueSize); err != nil {
		return err
	}
	if ch.MaxBlockSize != 0 {
		if err := checkRange("MaxBlockSize", ch.MaxBlockSize, 1, maxBlockLimit); err != nil {
			return err
		}
		if err := checkRange("BlockFragmentSize", ch.BlockFragmentSize, minFragmentSize, room); err != nil {
			return err
		}
		if n := fragmentsOf(ch.MaxBlockSize, ch.BlockFragmentSize); n > maxFragments {
			return fmt.Errorf("%s %d in fragments of %d makes %d fragments; want at most %d", "MaxBlockSize", ch.MaxBlockSize, ch.BlockFragmentSize, n, maxFragments)
		}
	}
	return nil
}

func fragmentsOf(size, fragment int) int { return (size + fragment - 1) / fragment }

func checkRange(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s is %d; want %d to %d", name, v, lo, hi)
	}
	return nil
}
