package engineconn

import (
	"errors"
	"time"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/message"
)

// Client runs a message.Conn over an engine client. The client's own
// goroutine only.
type Client struct {
	c                      *engine.Client
	conn                   *message.Conn
	connected              bool
	epoch                  time.Time
	buf                    [codec.MaxPayloadBytes]byte
	acks                   []uint16
	readErrors, sendErrors uint64
}

// NewClient returns channels over c, which must have reliable endpoints
// (ClientConfig.Reliable), configured by cfg (the server's config).
func NewClient(c *engine.Client, cfg message.Config) (*Client, error) {
	if _, err := c.NextSequence(); err != nil {
		return nil, err
	}
	cfg, err := checkConfig(cfg)
	if err != nil {
		return nil, err
	}
	conn, err := message.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{c: c, conn: conn, acks: make([]uint16, 0, 1024)}, nil
}

// Conn returns the channels; a new connection resets them.
func (a *Client) Conn() *message.Conn { return a.conn }

// Update reads what the engine client received since the last Update:
// payloads into the Conn, acks settling what it sent. Call it after the
// engine client's Update.
func (a *Client) Update(now time.Time) {
	on := a.c.State() == engine.Connected
	if on && !a.connected {
		a.conn.Reset()
		a.epoch = now
	}
	a.connected = on
	if !on {
		return
	}
	for n, seq, ok := a.c.ReceivePacket(a.buf[:]); ok; n, seq, ok = a.c.ReceivePacket(a.buf[:]) {
		err := a.conn.ReadPacket(uint16(seq), a.buf[:n])
		if err != nil && !errors.Is(err, message.ErrDuplicate) {
			a.readErrors++
		}
	}
	a.acks, _ = a.c.ReadAcks(a.acks[:0])
	for _, s := range a.acks {
		a.conn.Ack(s)
	}
	if st, err := a.c.ReliableStats(); err == nil {
		a.conn.SetRTT(time.Duration(st.RTT * float32(time.Millisecond)))
	}
}

// Flush writes one packet to the server, what is due or an empty packet
// carrying acks, and flushes the client's sends. It does nothing while
// the client is not connected.
func (a *Client) Flush(now time.Time) {
	if !a.connected {
		return
	}
	seq, err := a.c.NextSequence()
	if err != nil {
		a.sendErrors++
		return
	}
	n := a.conn.WritePacket(a.buf[:], seq, now.Sub(a.epoch))
	if err := a.c.SendPacket(a.buf[:n]); err != nil {
		a.sendErrors++
	}
	a.c.Flush()
}

// Errors returns the packets refused as malformed and the sends that
// failed.
func (a *Client) Errors() (read, send uint64) { return a.readErrors, a.sendErrors }
