package bench

import (
	"errors"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

// loadEndpoint is what a load client needs of its connection: an
// engine.Client, or a bareClient for the protocol-free control.
type loadEndpoint interface {
	Connect(token []byte, now time.Time) error
	Update(now time.Time)
	State() engine.ClientState
	SendPacket(payload []byte) error
	ReceivePacket(dst []byte) (n int, sequence uint64, ok bool)
	Flush()
	Disconnect(now time.Time)
}

var (
	_ loadEndpoint = (*engine.Client)(nil)
	_ loadEndpoint = (*bareClient)(nil)
)

var (
	bareHelloDatagram = []byte{bareHello}
	bareByeDatagram   = []byte{bareBye}
)

var errBareNotConnected = errors.New("bench: bare client is not connected")

// bareClientBatch is the datagrams a bare client reads or queues at once,
// as many as an engine client.
const bareClientBatch = 16

// bareClient is a load client without netcode (LoadConfig.Bare): it
// connects by sending bareHello until the server answers anything, sends
// a hello whenever it has sent nothing for engine.PacketSendInterval, and
// times out like a netcode client when the server falls silent. Its
// payloads go out as they are. ReceivePacket reports a datagram's stamp
// sequence (an echo's payload sequence, a snapshot's tick) as the packet
// sequence an engine client would.
type bareClient struct {
	conn    batchio.Conn
	server  netip.AddrPort
	timeout time.Duration
	state   engine.ClientState

	now, lastSend, lastRecv time.Time

	rx  []batchio.Message
	tx  []batchio.Message
	txN int
	// The receive queue: a ring of datagrams.
	q          []batchio.Message
	head, tail int
}

func newBareClient(conn batchio.Conn, server netip.AddrPort, timeout time.Duration, queue int) *bareClient {
	return &bareClient{conn: conn, server: server, timeout: timeout,
		rx: batchio.NewMessages(bareClientBatch, codec.MaxPacketBytes),
		tx: batchio.NewMessages(bareClientBatch, codec.MaxPacketBytes),
		q:  batchio.NewMessages(queue, codec.MaxPayloadBytes)}
}

// Connect starts connecting; the token is not used.
func (c *bareClient) Connect(_ []byte, now time.Time) error {
	c.now, c.lastRecv, c.lastSend = now, now, time.Time{}
	c.head, c.tail = 0, 0
	c.state = engine.SendingConnectionRequest
	c.sendDue()
	c.Flush()
	return nil
}

func (c *bareClient) State() engine.ClientState { return c.state }

// Update reads what arrived, applies the timeout and sends a hello if due.
func (c *bareClient) Update(now time.Time) {
	c.now = now
	if c.state <= engine.Disconnected {
		return
	}
	for range 64 {
		n, err := c.conn.ReadBatch(c.rx)
		if err != nil || n == 0 {
			break
		}
		for i := range c.rx[:n] {
			c.receive(&c.rx[i])
		}
	}
	if now.Sub(c.lastRecv) > c.timeout {
		if c.state == engine.SendingConnectionRequest {
			c.state = engine.ConnectionRequestTimedOut
		} else {
			c.state = engine.ConnectionTimedOut
		}
		return
	}
	c.sendDue()
	c.Flush()
}

func (c *bareClient) receive(m *batchio.Message) {
	if m.N < 1 || m.Addr != c.server {
		return
	}
	c.lastRecv = c.now
	if c.state == engine.SendingConnectionRequest {
		c.state = engine.Connected
	}
	if m.N == 1 || c.state != engine.Connected {
		return // a hello (or echoed control byte)
	}
	if c.tail-c.head == len(c.q) {
		return // full: dropped, as an engine client drops
	}
	e := &c.q[c.tail%len(c.q)]
	e.N = copy(e.Buf, m.Buf[:m.N])
	c.tail++
}

func (c *bareClient) sendDue() {
	if c.now.Sub(c.lastSend) >= engine.PacketSendInterval {
		c.queue(bareHelloDatagram)
	}
}

func (c *bareClient) queue(p []byte) {
	if c.txN == len(c.tx) {
		c.Flush()
	}
	m := &c.tx[c.txN]
	m.N = copy(m.Buf, p)
	m.Addr = c.server
	c.txN++
	c.lastSend = c.now
}

// SendPacket queues payload for the next Flush or Update.
func (c *bareClient) SendPacket(payload []byte) error {
	if len(payload) < 1 || len(payload) > codec.MaxPayloadBytes {
		return codec.ErrPayloadSize
	}
	if c.state != engine.Connected {
		return errBareNotConnected
	}
	c.queue(payload)
	return nil
}

// ReceivePacket pops the oldest datagram; its sequence is its stamp's.
func (c *bareClient) ReceivePacket(dst []byte) (int, uint64, bool) {
	if c.head == c.tail {
		return 0, 0, false
	}
	e := &c.q[c.head%len(c.q)]
	c.head++
	n := copy(dst, e.Buf[:e.N])
	_, seq, _ := ReadStamp(e.Buf[:e.N])
	return n, seq, true
}

// Flush sends what was queued.
func (c *bareClient) Flush() {
	if c.txN > 0 {
		_, _ = c.conn.WriteBatch(c.tx[:c.txN])
		c.txN = 0
	}
}

// Disconnect sends engine.NumDisconnectPackets byes, as a netcode client
// sends its disconnect packets, and stops.
func (c *bareClient) Disconnect(now time.Time) {
	c.now = now
	if c.state <= engine.Disconnected {
		return
	}
	for range engine.NumDisconnectPackets {
		c.queue(bareByeDatagram)
	}
	c.Flush()
	c.state = engine.Disconnected
}
