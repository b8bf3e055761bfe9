package engine

import (
	"fmt"
	"time"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/reliable"
)

// clientReliable is a client's reliable endpoint (ClientConfig.Reliable).
type clientReliable struct {
	ep      *reliable.Endpoint
	epoch   time.Time // of the current connection
	updated time.Time // when the estimates were last recomputed
	scratch [codec.MaxPayloadBytes]byte
	// acks holds the acks the endpoint reported until ReadAcks: the
	// endpoint's own list is drained after every packet, because a full
	// one stops recording acks (and RTT samples), as in the C library.
	// The oldest are overwritten when the game does not read them.
	acks            []uint16
	ackHead, ackLen int
}

func (r *clientReliable) init(cfg *reliable.Config) error {
	if cfg == nil {
		return nil
	}
	if err := checkReliable("client", cfg); err != nil {
		return fmt.Errorf("%w: %w", ErrClientConfig, err)
	}
	// A few reassembly buffers of its own: a client talks to one server.
	pool, err := reliable.NewPool(*cfg, defaultRelPoolPerEndpoint, defaultRelPoolPerEndpoint)
	if err != nil {
		return fmt.Errorf("%w: Reliable: %w", ErrClientConfig, err)
	}
	ep, err := reliable.New(*cfg, pool)
	if err != nil {
		return fmt.Errorf("%w: Reliable: %w", ErrClientConfig, err)
	}
	r.ep = ep
	r.acks = make([]uint16, cfg.AckBufferSize)
	return nil
}

// restart readies the endpoint for a connection starting at now.
func (r *clientReliable) restart(now time.Time) {
	if r.ep == nil {
		return
	}
	r.epoch, r.updated = now, now
	r.ackHead, r.ackLen = 0, 0
	_ = r.ep.Restart(nil, 0) // its own pool: cannot fail
}

// at returns the endpoint's time for now.
func (r *clientReliable) at(now time.Time) time.Duration { return relClock(r.epoch, now) }

func (c *Client) sendReliable(payload []byte) error {
	r := &c.rel
	if max := r.ep.Config().MaxPacketSize; len(payload) < 1 || len(payload) > max {
		return fmt.Errorf("%w: got %d bytes; want 1 to %d (the reliable MaxPacketSize)", codec.ErrPayloadSize, len(payload), max)
	}
	if c.state != Connected {
		return fmt.Errorf("%w (state: %v)", ErrClientNotConnected, c.state)
	}
	r.ep.SetTime(r.at(c.now))
	p, err := r.ep.Send(payload)
	if err != nil {
		return err
	}
	d := p.Datagrams()
	if c.txN+d > len(c.tx) {
		c.flush() // the fragments of a packet leave in one batch
	}
	for k := range d {
		n, _ := p.WriteDatagram(k, r.scratch[:])
		buf := c.txBuf()
		m, err := codec.WritePayloadPacket(buf, c.nextSequence(), r.scratch[:n], c.sendKey)
		c.txCommit(m, err)
	}
	return nil
}

// receiveReliable hands a payload to the endpoint and queues what it
// completes.
func (c *Client) receiveReliable(payload []byte, now time.Time) {
	r := &c.rel
	r.ep.SetTime(r.at(now))
	d, reason := r.ep.Receive(payload)
	if reason != reliable.DropNone {
		c.stats.ReliableDrops[reason]++
		return
	}
	if d.Evicted {
		c.stats.ReliableDrops[reliable.DropReassemblyEvicted]++
	}
	if d.Delivered && !c.queue.push(d.Payload, uint64(d.Sequence)) {
		r.ep.Refuse() // not acked: the server sees it lost
		c.stats.Drops[ClientDropQueueFull]++
		return
	}
	for _, a := range r.ep.Acks() {
		if r.ackLen == len(r.acks) {
			r.ackHead = (r.ackHead + 1) % len(r.acks)
			r.ackLen--
			c.stats.AcksOverwritten++
		}
		r.acks[(r.ackHead+r.ackLen)%len(r.acks)] = a
		r.ackLen++
	}
	r.ep.ClearAcks()
}

// updateReliable recomputes the estimates every relUpdateInterval.
func (c *Client) updateReliable(now time.Time) {
	r := &c.rel
	if r.ep == nil || c.state != Connected || now.Sub(r.updated) < relUpdateInterval {
		return
	}
	r.updated = now
	r.ep.Update(r.at(now))
}

// NextSequence returns the reliable sequence the next SendPacket will
// carry: the sequence the server's acks will name.
func (c *Client) NextSequence() (uint16, error) {
	if c.rel.ep == nil {
		return 0, ErrReliableOff
	}
	return c.rel.ep.NextSequence(), nil
}

// ReadAcks appends to dst the sequences of the packets the server has
// acknowledged since the last ReadAcks, oldest first, and returns it (no
// allocation when dst has room for the config's AckBufferSize). Acks
// arrive with the server's packets; the client keeps the newest
// AckBufferSize unread ones (the older are counted in
// Stats().AcksOverwritten). Not reading them costs nothing else: acks and
// RTT samples are recorded whether or not the game reads them.
func (c *Client) ReadAcks(dst []uint16) ([]uint16, error) {
	r := &c.rel
	if r.ep == nil {
		return dst, ErrReliableOff
	}
	for k := range r.ackLen {
		dst = append(dst, r.acks[(r.ackHead+k)%len(r.acks)])
	}
	r.ackHead, r.ackLen = 0, 0
	return dst, nil
}

// ReliableStats returns the connection's estimates (RTT, jitter, loss,
// bandwidth) as of the last update, which Update runs every 100 ms.
func (c *Client) ReliableStats() (ReliableStats, error) {
	if c.rel.ep == nil {
		return ReliableStats{}, ErrReliableOff
	}
	cnt := c.rel.ep.Counters()
	return ReliableStats{Stats: c.rel.ep.Stats(), PacketsSent: cnt[reliable.PacketsSent],
		PacketsReceived: cnt[reliable.PacketsReceived], PacketsAcked: cnt[reliable.PacketsAcked]}, nil
}
