package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/reliable"
	"github.com/netcode-go/netcode/ring"
)

const (
	// clientReadBatch is how many datagrams one ReadBatch may return.
	clientReadBatch = 16
	// clientMaxReadBatches bounds how many batches one Update drains from
	// each conn, so a flood cannot keep Update from reaching its timers.
	clientMaxReadBatches = 64
	// clientSendBatch is how many outgoing datagrams are collected before a
	// WriteBatch; it holds a whole Disconnect burst.
	clientSendBatch = 16
	// clientTokenHistory is how many distinct client-to-server keys a Client
	// remembers the next send sequence of (see Connect).
	clientTokenHistory = 32
	// maxClientReceiveQueue bounds ClientConfig.ReceiveQueueSize (each entry
	// holds a 1200-byte payload).
	maxClientReceiveQueue = 1 << 16
)

// ClientConfig configures a Client. The zero value is usable.
type ClientConfig struct {
	// Logger receives lifecycle events (connect, state changes,
	// disconnect); nothing is logged per packet. nil discards.
	Logger *slog.Logger
	// ReceiveQueueSize is how many received payloads wait for
	// ReceivePacket; a payload arriving at a full queue is dropped and
	// counted. A power of two up to 65536; 0 means DefaultReceiveQueueSize (256).
	ReceiveQueueSize int
	// OnStateChange, if set, is called from Connect, Update, Disconnect and
	// the loopback methods on every state change. It must not call Connect,
	// Update or Disconnect.
	OnStateChange func(old, new ClientState)
	// SendLoopbackPacket is called by SendPacket on a loopback client
	// (ConnectLoopback) instead of sending a datagram. payload is valid only
	// during the call.
	SendLoopbackPacket func(clientIndex int, payload []byte, sequence uint64)
	// Reliable, when set, gives the client a reliable 1.0 endpoint (see
	// ServerConfig.Reliable; the server must use the same FragmentSize):
	// SendPacket then takes packets of up to Reliable.MaxPacketSize,
	// ReceivePacket returns reassembled packets and their reliable
	// sequences, and ReadAcks, NextSequence and ReliableStats tell what the
	// server received. The receive queue holds long packets in several
	// entries of 1200 bytes.
	Reliable *reliable.Config
	// NoChallengeTimeout is how long a server may leave the client's
	// connection requests without a challenge (or a denial) before the
	// client gives it up: it tries the token's next server, and after the
	// last it moves to ConnectionRequestUnanswered, so the game can fetch
	// a fresh token at once instead of waiting out the token's timeout. A
	// server answers within a round trip unless it refuses the token
	// silently: one copied by an on-path observer and presented first
	// from another address is refused from this client's address for its
	// whole life. Default DefaultNoChallengeTimeout (1 s, 10 requests);
	// allowed 100 ms to 1 min, or -1 to wait for the token's timeout as
	// the standard does.
	NoChallengeTimeout time.Duration
}

// DefaultNoChallengeTimeout is ClientConfig.NoChallengeTimeout's default.
const DefaultNoChallengeTimeout = time.Second

// Errors returned by the client. Wrapped errors add what was wrong.
var (
	ErrInvalidConnectToken = errors.New("netcode: invalid connect token")
	ErrClientNotConnected  = errors.New("netcode: client is not connected")
	ErrClientLoopback      = errors.New("netcode: client is in loopback mode; call DisconnectLoopback first")
	ErrClientBusy          = errors.New("netcode: client is connecting or connected; call Disconnect first")
	ErrClientNoRoute       = errors.New("netcode: no conn has the address family (IPv4/IPv6) of any server address in the connect token")
	ErrClientConfig        = errors.New("netcode: invalid client config")
	ErrClientNotLoopback   = errors.New("netcode: client is not in loopback mode; call ConnectLoopback first")
	ErrClientQueueFull     = errors.New("netcode: client receive queue is full; call ReceivePacket more often or raise ReceiveQueueSize")
)

// ClientDropReason is why the client dropped a datagram that the codec
// accepted, or a payload it could not queue.
type ClientDropReason uint8

// Client drop reasons.
const (
	// ClientDropNotConnecting: the client was disconnected, in an error
	// state or in loopback mode.
	ClientDropNotConnecting ClientDropReason = iota
	// ClientDropOtherAddress: the datagram did not come from the server the
	// client is talking to.
	ClientDropOtherAddress
	// ClientDropUnexpected: a packet type the current state ignores, such
	// as a challenge while connected.
	ClientDropUnexpected
	// ClientDropBeforeConnected: a payload that arrived before the client
	// was connected (it still advanced the replay window).
	ClientDropBeforeConnected
	// ClientDropQueueFull: a payload arrived at a full receive queue.
	ClientDropQueueFull
	// ClientDropLoopbackPayload: ProcessLoopbackPacket was given a payload
	// outside 1..1200 bytes or called on a client not in loopback mode.
	ClientDropLoopbackPayload

	// NumClientDropReasons sizes ClientStats.Drops.
	NumClientDropReasons
)

var clientDropNames = [NumClientDropReasons]string{
	"not connecting",
	"from another address",
	"unexpected in this state",
	"payload before connected",
	"receive queue full",
	"bad loopback payload",
}

func (r ClientDropReason) String() string {
	if r < NumClientDropReasons {
		return clientDropNames[r]
	}
	return fmt.Sprintf("ClientDropReason(%d)", uint8(r))
}

// ClientStats are the client's counters since construction.
type ClientStats struct {
	PacketsIn, BytesIn   uint64 // datagrams read from the conns
	PacketsOut, BytesOut uint64 // datagrams handed to the network (and loopback sends)
	// CodecDrops counts datagrams the codec rejected, by reason.
	CodecDrops [codec.NumDropReasons]uint64
	// Drops counts datagrams and payloads the client dropped, by reason.
	Drops [NumClientDropReasons]uint64
	// ReadErrors and WriteErrors count failed ReadBatch and WriteBatch
	// calls; SendDropped counts datagrams a WriteBatch did not take.
	ReadErrors, WriteErrors, SendDropped uint64
	// ReceiveTruncated counts payloads ReceivePacket cut to fit dst.
	ReceiveTruncated uint64
	// ReliableDrops counts payloads the reliable endpoint refused, by
	// reason (ClientConfig.Reliable).
	ReliableDrops [reliable.NumDropReasons]uint64
	// AcksOverwritten counts acks dropped unread from a full ack list
	// (ReadAcks).
	AcksOverwritten uint64
}

// tokenSequence remembers the next sequence sent with one client-to-server
// key, so that reconnecting with the same token never reuses a nonce.
type tokenSequence struct {
	key    [codec.KeyBytes]byte
	expire uint64 // the token's expire timestamp (unix seconds)
	next   uint64
	used   bool
}

// Client is a netcode client: the standard's state machine over one or more
// batchio conns. It starts no goroutines; the owner calls Update regularly
// (every few milliseconds, at least at 10 Hz) and the app methods, all from
// one goroutine.
type Client struct {
	cfg   ClientConfig
	log   *slog.Logger
	conns []batchio.Conn
	owned []batchio.Conn // opened by DialClient; closed by Close

	state    ClientState
	loopback bool
	now      time.Time // of the latest Connect, Update or Disconnect

	// Session: one Connect, across server addresses.
	token        codec.ConnectToken
	sendKey      *aead.PacketKey
	recvKey      *aead.PacketKey
	read         codec.ReadParams
	replay       ring.Replay
	connectStart time.Time
	tokenLife    time.Duration // < 0: never expires
	timeout      time.Duration // < 0: timeouts disabled
	sequence     uint64        // next send sequence
	res          reservation   // sequences set aside for SealNext
	seqSlot      int           // index into seqs of this session's key, -1 if none

	// Attempt: one server address.
	attemptStart   time.Time
	serverIndex    int
	serverAddr     netip.AddrPort
	serverConn     int
	lastSend       time.Time
	lastRecv       time.Time
	challengeSeq   uint64
	challengeToken [codec.ChallengeTokenBytes]byte
	clientIndex    int
	maxClients     int

	seqs [clientTokenHistory]tokenSequence

	rx     []batchio.Message
	tx     []batchio.Message
	txN    int
	txConn int
	pkt    codec.Packet
	queue  payloadQueue
	stats  ClientStats
	rel    clientReliable
}

// NewClient returns a disconnected client that sends and receives on conns.
// For each server address in a connect token the client uses the first conn
// whose local address has the same family (IPv4 or IPv6); a server address no
// conn can reach is skipped like a server that failed. A client with no
// conns can only be used in loopback mode. The caller keeps ownership of
// conns: Close does not close them.
func NewClient(cfg ClientConfig, conns ...batchio.Conn) (*Client, error) {
	if cfg.ReceiveQueueSize == 0 {
		cfg.ReceiveQueueSize = DefaultReceiveQueueSize
	}
	if n := cfg.ReceiveQueueSize; n < 1 || n > maxClientReceiveQueue || bits.OnesCount(uint(n)) != 1 {
		return nil, fmt.Errorf("%w: ReceiveQueueSize is %d; want a power of two from 1 to %d, or 0 for %d",
			ErrClientConfig, n, maxClientReceiveQueue, DefaultReceiveQueueSize)
	}
	if cfg.NoChallengeTimeout == 0 {
		cfg.NoChallengeTimeout = DefaultNoChallengeTimeout
	}
	if d := cfg.NoChallengeTimeout; d != -1 && (d < 100*time.Millisecond || d > time.Minute) {
		return nil, fmt.Errorf("%w: NoChallengeTimeout is %v; want 100ms to 1m, or -1 for none (0 means %v)",
			ErrClientConfig, d, DefaultNoChallengeTimeout)
	}
	for i, c := range conns {
		if c == nil {
			return nil, fmt.Errorf("%w: conn %d is nil", ErrClientConfig, i)
		}
	}
	c := &Client{
		cfg:     cfg,
		log:     cfg.Logger,
		conns:   append([]batchio.Conn(nil), conns...),
		seqSlot: -1,
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if err := c.rel.init(cfg.Reliable); err != nil {
		return nil, err
	}
	c.queue.init(cfg.ReceiveQueueSize)
	c.rx = batchio.NewMessages(clientReadBatch, codec.MaxPacketBytes)
	c.tx = batchio.NewMessages(clientSendBatch, codec.MaxPacketBytes)
	c.read = codec.ReadParams{Role: codec.RoleClient, Replay: &c.replay}
	c.replay.Reset()
	return c, nil
}

// State returns the client's state.
func (c *Client) State() ClientState { return c.state }

// ClientIndex is the server's slot for this client, valid when Connected.
func (c *Client) ClientIndex() int { return c.clientIndex }

// MaxClients is the server's number of slots, valid when Connected.
func (c *Client) MaxClients() int { return c.maxClients }

// ServerAddress is the server address the client is connecting or
// connected to; the zero value when there is none.
func (c *Client) ServerAddress() netip.AddrPort { return c.serverAddr }

// Stats returns a copy of the client's counters.
func (c *Client) Stats() ClientStats { return c.stats }

// Close ends the client. A session in progress ends as with Disconnect,
// with its redundant disconnect packets (as the reference's client does
// when destroyed), so the server frees the slot at once; an error state is
// left as it is. Sockets DialClient opened are closed; conns given to
// NewClient stay open: they belong to the caller.
func (c *Client) Close() error {
	if c.loopback || c.state > Disconnected {
		c.Disconnect(c.now)
	}
	var errs []error
	for _, conn := range c.owned {
		errs = append(errs, conn.Close())
	}
	c.owned = nil
	return errors.Join(errs...)
}

// Connect starts connecting with a 2048-byte connect token: it checks the
// token and moves to SendingConnectionRequest with the token's first
// reachable server address. An invalid token moves the client to
// InvalidConnectToken and the error says why. A session in progress is
// ended first, with disconnect packets, as by Disconnect.
//
// The token's life (expire - create) is measured from now, so a client whose
// clock differs from the web backend's still gets the whole life.
//
// A token carries one session: servers that follow the reference's 1.4.5
// rules (this one included) refuse a token that has connected before, so
// reconnecting needs a fresh token. Against an older server that admits it,
// a token whose client-to-server key this Client used among its last 32
// tokens continues that key's send sequence instead of restarting at 0, so
// that the client itself reuses no nonce.
func (c *Client) Connect(token []byte, now time.Time) error {
	if c.loopback {
		return ErrClientLoopback
	}
	c.now = now
	if c.state > Disconnected {
		c.Disconnect(now)
	}
	if err := c.readToken(token); err != nil {
		c.reset(InvalidConnectToken)
		return err
	}
	if !c.anyRoute() {
		c.token = codec.ConnectToken{}
		c.reset(Disconnected)
		return ErrClientNoRoute
	}
	slot := c.claimSequence()
	sendKey, err := aead.NewPacketKey(c.token.ClientToServerKey[:], c.token.ProtocolID)
	if err != nil {
		return err // cannot happen: the key is 32 bytes
	}
	recvKey, err := aead.NewPacketKey(c.token.ServerToClientKey[:], c.token.ProtocolID)
	if err != nil {
		return err
	}
	c.seqSlot = slot
	c.sequence = c.seqs[slot].next
	c.sendKey, c.recvKey = sendKey, recvKey
	c.read.ProtocolID = c.token.ProtocolID
	c.read.Key = recvKey
	c.connectStart = now
	c.tokenLife = -1
	if life := c.token.ExpireTimestamp - c.token.CreateTimestamp; c.token.ExpireTimestamp != math.MaxUint64 && life <= uint64(math.MaxInt64/int64(time.Second)) {
		c.tokenLife = time.Duration(life) * time.Second
	}
	c.timeout = -1
	if c.token.TimeoutSeconds >= 0 {
		c.timeout = time.Duration(c.token.TimeoutSeconds) * time.Second
	}
	c.queue.clear()
	c.rel.restart(now)
	c.log.Info("netcode client connecting",
		"servers", c.token.NumServerAddresses,
		"protocol_id", IDString(c.token.ProtocolID),
		"timeout_seconds", c.token.TimeoutSeconds)
	c.beginAttempt(0, now) // anyRoute said one exists
	return nil
}

// readToken reads and checks the public connect token into c.token.
func (c *Client) readToken(token []byte) error {
	if len(token) != codec.ConnectTokenBytes {
		return fmt.Errorf("%w: it is %d bytes; want %d", ErrInvalidConnectToken, len(token), codec.ConnectTokenBytes)
	}
	if err := codec.ReadConnectToken(token, &c.token); err != nil {
		c.token = codec.ConnectToken{}
		return fmt.Errorf("%w: %v", ErrInvalidConnectToken, err)
	}
	if c.token.CreateTimestamp > c.token.ExpireTimestamp {
		err := fmt.Errorf("%w: create timestamp %d is after expire timestamp %d",
			ErrInvalidConnectToken, c.token.CreateTimestamp, c.token.ExpireTimestamp)
		c.token = codec.ConnectToken{}
		return err
	}
	return nil
}

// connFor returns the index of the first conn of addr's family, or -1.
func (c *Client) connFor(addr netip.AddrPort) int {
	v4 := addr.Addr().Unmap().Is4()
	for i, conn := range c.conns {
		if conn.LocalAddr().Addr().Unmap().Is4() == v4 {
			return i
		}
	}
	return -1
}

func (c *Client) anyRoute() bool {
	for _, a := range c.token.Addresses() {
		if c.connFor(a) >= 0 {
			return true
		}
	}
	return false
}

// claimSequence finds or makes the sequence record of the token's
// client-to-server key. An unused record is taken first, then the one of
// the token that expires (or expired) first.
func (c *Client) claimSequence() int {
	free := -1
	for i := range c.seqs {
		e := &c.seqs[i]
		if e.used && e.key == c.token.ClientToServerKey {
			e.expire = max(e.expire, c.token.ExpireTimestamp)
			return i
		}
		if free < 0 && !e.used {
			free = i
		}
	}
	if free < 0 {
		free = 0
		for i := range c.seqs {
			if c.seqs[i].expire < c.seqs[free].expire {
				free = i
			}
		}
	}
	c.seqs[free] = tokenSequence{key: c.token.ClientToServerKey, expire: c.token.ExpireTimestamp, used: true}
	return free
}

// nextSequence returns the sequence for the next packet sent and records
// the one after it. Requests use one too (they carry none): the reference's
// counter counts every packet sent.
func (c *Client) nextSequence() uint64 {
	c.skipReserved()
	s := c.sequence
	c.sequence++
	c.recordSequence()
	return s
}

// beginAttempt starts SendingConnectionRequest with the first server
// address at or after index from that a conn can reach. It reports false if
// there is none.
func (c *Client) beginAttempt(from int, now time.Time) bool {
	addrs := c.token.Addresses()
	for i := from; i < len(addrs); i++ {
		ci := c.connFor(addrs[i])
		if ci < 0 {
			c.log.Debug("netcode client skipping server: no conn of its address family", "server", addrs[i])
			continue
		}
		c.serverIndex = i
		c.serverAddr = netip.AddrPortFrom(addrs[i].Addr().Unmap(), addrs[i].Port())
		c.serverConn = ci
		c.attemptStart = now
		c.lastSend = now.Add(-time.Second) // send at once
		c.lastRecv = now
		c.challengeSeq = 0
		clear(c.challengeToken[:])
		c.clientIndex, c.maxClients = 0, 0
		c.replay.Reset()
		c.log.Info("netcode client sending connection requests", "server", c.serverAddr, "index", i)
		c.setState(SendingConnectionRequest)
		return true
	}
	return false
}

// fail ends the current server attempt: the client tries the next server
// address, or moves to state if there is none.
func (c *Client) fail(state ClientState, now time.Time) {
	c.log.Info("netcode client server attempt failed", "server", c.serverAddr, "reason", state.String())
	if c.beginAttempt(c.serverIndex+1, now) {
		return
	}
	c.reset(state)
}

// reset ends the session and moves to state. Queued payloads stay readable
// until the next Connect.
func (c *Client) reset(state ClientState) {
	if c.state != state {
		c.log.Info("netcode client stopped", "state", state.String(), "server", c.serverAddr)
	}
	c.flush()
	c.loopback = false
	c.sendKey, c.recvKey, c.read.Key = nil, nil, nil
	c.seqSlot = -1
	c.sequence = 0
	c.res = reservation{}
	c.token = codec.ConnectToken{}
	c.serverIndex = 0
	c.serverAddr = netip.AddrPort{}
	c.clientIndex, c.maxClients = 0, 0
	c.challengeSeq = 0
	clear(c.challengeToken[:])
	c.setState(state)
}

func (c *Client) setState(state ClientState) {
	old := c.state
	if old == state {
		return
	}
	c.state = state
	if c.cfg.OnStateChange != nil {
		c.cfg.OnStateChange(old, state)
	}
}

// Update runs the client at time now: it reads every waiting datagram,
// applies the state machine's timers and sends what is due (requests,
// responses or keep-alives at 10 Hz), flushing all queued datagrams.
func (c *Client) Update(now time.Time) {
	c.now = now
	if c.loopback {
		return
	}
	c.receive(now)
	c.updateReliable(now)
	c.checkTimers(now)
	c.sendDue(now)
	c.flush()
}

func (c *Client) receive(now time.Time) {
	for _, conn := range c.conns {
		for range clientMaxReadBatches {
			n, err := conn.ReadBatch(c.rx)
			if err != nil {
				c.stats.ReadErrors++
				break
			}
			if n == 0 {
				break
			}
			for i := range c.rx[:n] {
				m := &c.rx[i]
				c.processPacket(m.Buf[:m.N], m.Addr, now)
			}
			if n < len(c.rx) {
				break
			}
		}
	}
}

// dropReason returns the codec's reason without errors.As, which would
// allocate for every dropped packet.
func dropReason(err error) codec.DropReason {
	if r, ok := err.(codec.DropReason); ok {
		return r
	}
	return codec.ReasonOf(err)
}

// processPacket handles one datagram from the network.
func (c *Client) processPacket(data []byte, from netip.AddrPort, now time.Time) {
	c.stats.PacketsIn++
	c.stats.BytesIn += uint64(len(data))
	if c.state <= Disconnected {
		c.stats.Drops[ClientDropNotConnecting]++
		return
	}
	// Check the source before decrypting, so that a stranger's packets do
	// not cost a decryption or touch the replay window. Tokens carry neither
	// IPv4-mapped forms nor zones, so compare without them.
	if netip.AddrPortFrom(from.Addr().Unmap().WithZone(""), from.Port()) != c.serverAddr {
		c.stats.Drops[ClientDropOtherAddress]++
		return
	}
	c.read.Now = uint64(now.Unix())
	if err := codec.ReadPacket(data, &c.read, &c.pkt); err != nil {
		c.stats.CodecDrops[dropReason(err)]++
		return
	}
	p := &c.pkt
	switch {
	case p.Type == codec.ConnectionDenied && c.state.IsConnecting():
		c.fail(ConnectionDenied, now)
	case p.Type == codec.ConnectionChallenge && c.state == SendingConnectionRequest:
		c.challengeSeq = p.ChallengeSequence
		copy(c.challengeToken[:], p.ChallengeToken)
		c.lastRecv = now
		c.lastSend = now.Add(-time.Second) // answer at once
		c.setState(SendingConnectionResponse)
	case p.Type == codec.ConnectionKeepAlive && c.state == SendingConnectionResponse:
		c.lastRecv = now
		c.clientIndex = int(p.ClientIndex)
		c.maxClients = int(p.MaxClients)
		c.log.Info("netcode client connected", "server", c.serverAddr,
			"client_index", c.clientIndex, "max_clients", c.maxClients)
		c.setState(Connected)
	case p.Type == codec.ConnectionKeepAlive && c.state == Connected:
		c.lastRecv = now
	case p.Type == codec.ConnectionPayload && c.state == Connected:
		c.lastRecv = now
		if c.rel.ep != nil {
			c.receiveReliable(p.Payload, now)
		} else if !c.queue.push(p.Payload, p.Sequence) {
			c.stats.Drops[ClientDropQueueFull]++
		}
	case p.Type == codec.ConnectionPayload:
		c.stats.Drops[ClientDropBeforeConnected]++
	case p.Type == codec.ConnectionDisconnect && c.state == Connected:
		c.log.Info("netcode client disconnected by server", "server", c.serverAddr)
		c.reset(Disconnected)
	default:
		c.stats.Drops[ClientDropUnexpected]++
	}
}

func (c *Client) checkTimers(now time.Time) {
	switch c.state {
	case SendingConnectionRequest, SendingConnectionResponse:
		if c.tokenLife >= 0 && now.Sub(c.connectStart) >= c.tokenLife {
			c.reset(ConnectTokenExpired)
			return
		}
		if c.state == SendingConnectionRequest && c.cfg.NoChallengeTimeout >= 0 &&
			now.Sub(c.attemptStart) >= c.cfg.NoChallengeTimeout && (c.timeout < 0 || c.cfg.NoChallengeTimeout < c.timeout) {
			c.fail(ConnectionRequestUnanswered, now)
			return
		}
		if c.timeout >= 0 && now.Sub(c.lastRecv) > c.timeout {
			if c.state == SendingConnectionRequest {
				c.fail(ConnectionRequestTimedOut, now)
			} else {
				c.fail(ConnectionResponseTimedOut, now)
			}
		}
	case Connected:
		if c.timeout >= 0 && now.Sub(c.lastRecv) > c.timeout {
			c.reset(ConnectionTimedOut)
		}
	}
}

// sendDue queues the request, response or keep-alive when one is due.
func (c *Client) sendDue(now time.Time) {
	if now.Sub(c.lastSend) < PacketSendInterval {
		return
	}
	var (
		buf []byte
		n   int
		err error
	)
	switch c.state {
	case SendingConnectionRequest:
		buf = c.txBuf()
		c.nextSequence()
		n, err = codec.WriteRequestPacket(buf, c.token.ProtocolID, c.token.ExpireTimestamp,
			c.token.Nonce[:], c.token.PrivateData[:])
	case SendingConnectionResponse:
		buf = c.txBuf()
		n, err = codec.WriteResponsePacket(buf, c.nextSequence(), c.challengeSeq, c.challengeToken[:], c.sendKey)
	case Connected:
		buf = c.txBuf()
		n, err = codec.WriteKeepAlivePacket(buf, c.nextSequence(), 0, 0, c.sendKey)
	default:
		return
	}
	c.txCommit(n, err)
}

// txBuf returns the buffer of the next outgoing datagram to the current
// server, flushing first if the batch is full or holds datagrams for
// another conn.
func (c *Client) txBuf() []byte {
	if c.txN == len(c.tx) || (c.txN > 0 && c.txConn != c.serverConn) {
		c.flush()
	}
	c.txConn = c.serverConn
	return c.tx[c.txN].Buf
}

// txCommit queues the datagram written into txBuf.
func (c *Client) txCommit(n int, err error) {
	if err != nil {
		c.stats.WriteErrors++ // a writer rejected its arguments: a bug
		return
	}
	m := &c.tx[c.txN]
	m.N = n
	m.Addr = c.serverAddr
	c.txN++
	c.lastSend = c.now
}

// flush hands the queued datagrams to the conn.
func (c *Client) flush() {
	if c.txN == 0 {
		return
	}
	msgs := c.tx[:c.txN]
	c.txN = 0
	// One call: WriteBatch tries every datagram and drops what it cannot
	// send; sending any of them again could duplicate it.
	n, err := c.conns[c.txConn].WriteBatch(msgs)
	n = min(max(n, 0), len(msgs))
	if err != nil {
		c.stats.WriteErrors++
	}
	for i := range msgs[:n] {
		c.stats.BytesOut += uint64(msgs[i].N)
	}
	c.stats.PacketsOut += uint64(n)
	c.stats.SendDropped += uint64(len(msgs) - n)
}

// Flush sends the datagrams queued by SendPacket now instead of at the end
// of the next Update.
func (c *Client) Flush() { c.flush() }

// SendPacket sends a payload of 1 to 1200 bytes to the server. The client
// must be Connected. The datagram is queued and sent at the end of the next
// Update (or by Flush, or when the batch fills); a payload sent counts as
// activity, so no keep-alive is sent in the same interval.
//
// With ClientConfig.Reliable set, the payload may be up to its
// MaxPacketSize and is sent as a reliable packet (fragments, in one batch,
// when it is long); NextSequence tells its sequence first.
func (c *Client) SendPacket(payload []byte) error {
	if c.rel.ep != nil && !c.loopback {
		return c.sendReliable(payload)
	}
	if len(payload) < 1 || len(payload) > codec.MaxPayloadBytes {
		return fmt.Errorf("%w, got %d", codec.ErrPayloadSize, len(payload))
	}
	if c.loopback {
		return c.sendLoopback(payload)
	}
	if c.state != Connected {
		return fmt.Errorf("%w (state: %v)", ErrClientNotConnected, c.state)
	}
	buf := c.txBuf()
	n, err := codec.WritePayloadPacket(buf, c.nextSequence(), payload, c.sendKey)
	c.txCommit(n, err)
	return err
}

// ReceivePacket copies the oldest received payload into dst and returns its
// length and the sequence of the packet that carried it; ok is false when
// none is waiting. dst should have room for 1200 bytes: a longer payload is
// cut to len(dst) (counted in Stats().ReceiveTruncated).
func (c *Client) ReceivePacket(dst []byte) (n int, sequence uint64, ok bool) {
	n, size, sequence, ok := c.queue.pop(dst)
	if n < size {
		c.stats.ReceiveTruncated++
	}
	return n, sequence, ok
}

// Disconnect sends NumDisconnectPackets redundant disconnect packets to the
// server (if the client is connecting or connected) and moves to
// Disconnected. On a loopback client it is DisconnectLoopback.
func (c *Client) Disconnect(now time.Time) {
	c.now = now
	if c.loopback {
		c.DisconnectLoopback()
		return
	}
	if c.state <= Disconnected {
		return
	}
	for range NumDisconnectPackets {
		buf := c.txBuf()
		n, err := codec.WriteDisconnectPacket(buf, c.nextSequence(), c.sendKey)
		c.txCommit(n, err)
	}
	c.log.Info("netcode client disconnecting", "server", c.serverAddr)
	c.reset(Disconnected)
}

// Wait blocks until a datagram may be waiting for the client, its next
// timer is due (a resend at 10 Hz, a keep-alive, a timeout), the deadline
// passes, or its conns are closed; then the caller runs Update. While the
// client talks to a server it waits on that server's conn only. The timer
// is measured on the clock given to Update and Connect and waited in real
// time. Client goroutine only.
func (c *Client) Wait(deadline time.Time) error {
	if c.state.IsConnecting() || c.state == Connected && !c.loopback {
		next := c.lastSend.Add(PacketSendInterval)
		if c.timeout >= 0 {
			next = minTime(next, c.lastRecv.Add(c.timeout))
		}
		if c.state.IsConnecting() && c.tokenLife >= 0 {
			next = minTime(next, c.connectStart.Add(c.tokenLife))
		}
		if c.state == SendingConnectionRequest && c.cfg.NoChallengeTimeout >= 0 {
			next = minTime(next, c.attemptStart.Add(c.cfg.NoChallengeTimeout))
		}
		deadline = minTime(deadline, time.Now().Add(next.Sub(c.now)))
		return c.conns[c.serverConn].WaitRead(deadline)
	}
	if len(c.conns) == 0 {
		sleepUntil(deadline)
		return nil
	}
	err := batchio.WaitAny(deadline, c.conns...)
	if err != nil && !errors.Is(err, batchio.ErrClosed) {
		sleepUntil(deadline) // conns that cannot be waited on together
		return nil
	}
	return err
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// DialClient opens an IPv4 socket and, where the system has IPv6, an IPv6
// socket on ephemeral ports, and returns a client that uses them for server
// addresses of either family. Close closes the sockets.
func DialClient(cfg ClientConfig) (*Client, error) {
	sock := batchio.Config{RecvBuffer: 256 << 10, SendBuffer: 256 << 10}
	c4, err := batchio.Listen(netip.MustParseAddrPort("0.0.0.0:0"), sock)
	if err != nil {
		return nil, fmt.Errorf("netcode: client socket: %w", err)
	}
	conns := []batchio.Conn{c4}
	if c6, err := batchio.Listen(netip.MustParseAddrPort("[::]:0"), sock); err == nil {
		conns = append(conns, c6)
	}
	c, err := NewClient(cfg, conns...)
	if err != nil {
		for _, conn := range conns {
			conn.Close()
		}
		return nil, err
	}
	c.owned = conns
	return c, nil
}
