package message

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

var (
	// ErrQueueFull: the channel's send queue holds SendQueueSize messages
	// not yet acked (or not yet sent, on an unreliable channel).
	ErrQueueFull = errors.New("message: send queue full")
	// ErrBlockBusy: the channel has a block queued or in flight; one at a
	// time per channel.
	ErrBlockBusy = errors.New("message: a block is already queued on this channel")
	// ErrDuplicate: ReadPacket was given a packet sequence it has read
	// already; it ignored it.
	ErrDuplicate = errors.New("message: duplicate packet")
	// ErrMalformed: a packet that does not follow PROTOCOL.md, or names a
	// channel or size this Conn's config does not allow. Nothing in it
	// was applied.
	ErrMalformed = errors.New("message: malformed packet")
)

// Conn is one side of a connection's channels.
type Conn struct {
	cfg   Config
	chans []channel
	order []int // channel indexes in fill order

	rtt     time.Duration
	records records
	window  window

	unackedSince time.Duration // first write since the last ack; -1: none
	stalled      bool

	stats Stats
}

// channel is one channel's state; only the half for its kind is in use.
type channel struct {
	cfg ChannelConfig
	rs  relSend
	rr  relRecv
	us  unrelSend
	ur  unrelRecv
}

// Stats counts a Conn's traffic since New or Reset.
type Stats struct {
	PacketsWritten, PacketsRead    uint64
	MessagesSent, MessagesResent   uint64 // first sends and resends
	MessagesReceived               uint64 // new messages stored for Receive
	DuplicateMessages              uint64 // reliable messages received again
	FragmentsSent, FragmentsResent uint64
	BlocksReceived                 uint64
	// UnreliableDropped counts unreliable messages dropped on arrival:
	// receive queue full, older than the newest on a sequenced channel,
	// or in a stale packet.
	UnreliableDropped uint64
	// Refused counts messages and fragments a peer sent outside the
	// window it was given (a peer with another config).
	Refused          uint64
	DuplicatePackets uint64
	// StalePackets counts packets older than the duplicate window: their
	// reliable messages were read, their unreliable ones dropped.
	StalePackets     uint64
	MalformedPackets uint64
}

// New makes a Conn for cfg (see Config for defaults and ranges).
func New(cfg Config) (*Conn, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	c := &Conn{cfg: cfg, chans: make([]channel, len(cfg.Channels))}
	for i := range c.chans {
		ch := &c.chans[i]
		ch.cfg = cfg.Channels[i]
		if ch.cfg.Kind.reliable() {
			ch.rs.init(&ch.cfg)
			ch.rr.init(&ch.cfg)
		} else {
			ch.us.init(&ch.cfg)
			ch.ur.init(&ch.cfg)
		}
		c.order = append(c.order, i)
	}
	sort.SliceStable(c.order, func(a, b int) bool {
		return cfg.Channels[c.order[a]].Priority < cfg.Channels[c.order[b]].Priority
	})
	c.records.init(cfg.SentPackets, cfg.PacketBudget)
	c.Reset()
	return c, nil
}

// Config returns the Conn's config with its defaults filled in.
func (c *Conn) Config() Config { return c.cfg }

// Reset readies the Conn for a new connection: every queue emptied, every
// counter and id back to zero. It keeps its buffers.
func (c *Conn) Reset() {
	for i := range c.chans {
		ch := &c.chans[i]
		if ch.cfg.Kind.reliable() {
			ch.rs.reset()
			ch.rr.reset()
		} else {
			ch.us.reset()
			ch.ur.reset()
		}
	}
	c.records.reset()
	c.window = window{}
	c.rtt = c.cfg.InitialRTT
	c.unackedSince = -1
	c.stalled = false
	c.stats = Stats{}
}

// Stats returns the Conn's counters.
func (c *Conn) Stats() Stats { return c.stats }

// SetRTT gives the Conn the round trip time the packet layer measured
// (reliable.Stats.RTT); reliable resend times follow it.
func (c *Conn) SetRTT(rtt time.Duration) {
	if rtt > 0 {
		c.rtt = rtt
	}
}

// resendTime is how long a channel waits for an ack before resending.
func (c *Conn) resendTime(ch *channel) time.Duration {
	return max(ch.cfg.ResendFloor, c.rtt+c.rtt/4)
}

// Stalled reports whether the peer has acked nothing for StallTimeout
// while packets went to it, as of the last WritePacket. It clears when an
// ack arrives.
func (c *Conn) Stalled() bool { return c.stalled }

func (c *Conn) channel(i int) (*channel, error) {
	if i < 0 || i >= len(c.chans) {
		return nil, fmt.Errorf("message: channel %d; want 0 to %d", i, len(c.chans)-1)
	}
	return &c.chans[i], nil
}

// Send queues a copy of msg on channel ch. It returns ErrQueueFull when
// the channel's queue is full, and an error naming the limit for a
// message longer than the channel's MaxMessageSize.
func (c *Conn) Send(ch int, msg []byte) error {
	k, err := c.channel(ch)
	if err != nil {
		return err
	}
	if len(msg) > k.cfg.MaxMessageSize {
		return fmt.Errorf("message: %d-byte message on channel %d; want at most %d (MaxMessageSize)", len(msg), ch, k.cfg.MaxMessageSize)
	}
	if k.cfg.Kind.reliable() {
		return k.rs.push(msg, false)
	}
	return k.us.push(msg)
}

// SendBlock queues block on channel ch (a ReliableOrdered channel with
// MaxBlockSize set), in order with its messages. It goes as fragments
// resent until acked; messages sent after it wait for it, other channels
// do not. One block per channel at a time: ErrBlockBusy until the last
// is acked (BlockInFlight).
//
// The block is not copied: the Conn reads it until it is acked, and the
// caller must not change it until BlockInFlight reports false (or Reset).
// So one buffer (a map, a replay) can go to every client at once, and a
// connection costs no send buffer of MaxBlockSize.
func (c *Conn) SendBlock(ch int, block []byte) error {
	k, err := c.channel(ch)
	if err != nil {
		return err
	}
	if k.cfg.MaxBlockSize == 0 {
		return fmt.Errorf("message: channel %d does not carry blocks (set MaxBlockSize on a ReliableOrdered channel)", ch)
	}
	if len(block) < 1 || len(block) > k.cfg.MaxBlockSize {
		return fmt.Errorf("message: %d-byte block on channel %d; want 1 to %d (MaxBlockSize)", len(block), ch, k.cfg.MaxBlockSize)
	}
	return k.rs.push(block, true)
}

// Receive returns the next message of channel ch, or ok false when there
// is none (or ch is not a channel). msg aliases the Conn's buffer: it is
// valid until the next ReadPacket or Receive call.
func (c *Conn) Receive(ch int) (msg []byte, ok bool) {
	if ch < 0 || ch >= len(c.chans) {
		return nil, false
	}
	k := &c.chans[ch]
	if k.cfg.Kind.reliable() {
		return k.rr.pop()
	}
	return k.ur.pop()
}

// LastWasBlock reports whether the last message Receive returned on
// channel ch was a block (SendBlock) rather than a message (Send).
func (c *Conn) LastWasBlock(ch int) bool {
	if ch < 0 || ch >= len(c.chans) {
		return false
	}
	return c.chans[ch].rr.lastBlock
}

// BlockInFlight reports whether channel ch has a block queued or not yet
// acked: its buffer is still the Conn's to read.
func (c *Conn) BlockInFlight(ch int) bool {
	if ch < 0 || ch >= len(c.chans) {
		return false
	}
	return c.chans[ch].rs.blk.active
}

// Pending reports how many messages of channel ch wait to be sent or
// acked (a block counts as one).
func (c *Conn) Pending(ch int) int {
	if ch < 0 || ch >= len(c.chans) {
		return 0
	}
	k := &c.chans[ch]
	if k.cfg.Kind.reliable() {
		return int(k.rs.next - k.rs.oldest)
	}
	return k.us.n
}
