package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// Errors returned by the Server API.
var (
	ErrSlotIndex        = errors.New("netcode: client index out of range")
	ErrSlotNotConnected = errors.New("netcode: client slot is not connected")
	ErrSlotInUse        = errors.New("netcode: client slot is already connected")
	ErrSlotNotLoopback  = errors.New("netcode: client slot does not hold a loopback client")
	ErrSlotIsLoopback   = errors.New("netcode: client slot holds a loopback client; use DisconnectLoopbackClient")
	ErrClientIDInUse    = errors.New("netcode: a client with this id is already connected")
	ErrNoLoopbackSender = errors.New("netcode: ServerConfig.SendLoopbackPacket is nil; loopback clients need it")
	ErrEventQueueFull   = errors.New("netcode: the shard's event queue is full; call Poll more often or raise EventQueueSize")
	ErrSendQueueFull    = errors.New("netcode: the shard's send queue is full; the application sends faster than the shard can, or raise SendQueueSize")
	ErrServerStopped    = errors.New("netcode: server stopped")
	ErrManualOnly       = errors.New("netcode: this call drives a manual-mode server (ServerConfig.Manual); the default mode runs itself")
	errNoConns          = errors.New("netcode: server needs at least one conn")
)

// Server is a netcode dedicated server. It runs one shard per socket: a
// shard owns its socket, its buffers and the clients whose packets the
// kernel delivers to that socket (with Listen's SO_REUSEPORT sockets, the
// kernel's hash picks the shard). Client ids, the connect-token history and
// the slot count are global (admission state behind a lock that only
// handshakes take).
//
// By default each shard is a goroutine of its own. In manual mode
// (ServerConfig.Manual) the server starts no goroutines and the caller
// drives every shard with Update(now).
//
// The application uses one API in both modes, from one goroutine of its
// own (its game loop): Poll receives connects, disconnects and payloads;
// SendPacket, Broadcast, DisconnectClient and DisconnectAll send; Wait
// parks until there is something to poll; Update and Flush (manual mode)
// and the loopback calls belong to the same goroutine. These calls
// allocate nothing and, in the default mode, take no lock: they talk to
// the shards through single-producer rings. Stats, ShardStats,
// NumConnectedClients, MaxClients, PublicAddresses and LocalAddrs may be
// called from any goroutine, and so may Stop, Start and Close in the
// default mode (in manual mode they belong to the goroutine that drives
// Update). After Stop or Close, Poll delivers the disconnect events, and
// a slot is free again once its disconnect event has been polled.
//
// Sends are queued, not sent at once as in the reference: in the default
// mode the owning shard seals and sends them on its next pass (at once if
// it was parked); in manual mode they are sealed into the shard's batch
// and sent by the next Update or Flush. That is what lets a shard send a
// whole tick's datagrams in a few system calls.
type Server struct {
	cfg    ServerConfig
	log    *slog.Logger
	shards []*shard
	conns  []batchio.Conn
	owned  []batchio.Conn // opened by Listen; closed by Close
	slots  []slot
	adm    *admission
	// owner[i] is 0 when slot i has no connection, else gen<<32 | shard+1,
	// set by the owning shard before it reports the connect.
	owner []atomic.Uint64
	// events is signalled when a shard hands the application something.
	events chan struct{}
	ev     Event // reused by Poll so that it does not allocate
	// gather holds a payload longer than one inbox entry for Poll, acks
	// the acks of an EventAcks (application goroutine).
	gather []byte
	acks   [codec.MaxPayloadBytes / 2]uint16
	// Reliable endpoints (nil when off): the application's view of each
	// slot's next send sequence, the estimates the shards publish, and the
	// endpoints' clock's epoch.
	relSeq   []relSeq
	relStats []relStatsCell
	epoch    time.Time
	timer    *time.Timer // reused by Wait

	// Lifecycle, changed under mu: stopped between Stop and Start, closed
	// after Close (read without it by the application calls). startedAt is
	// the current run's start.
	mu        sync.Mutex
	stopped   atomic.Bool
	closed    atomic.Bool
	startedAt time.Time
	wg        sync.WaitGroup
	// realClock: ServerConfig.Clock is time.Now, so starting can wait for
	// the restart rule (waitTokens).
	realClock bool
}

// Listen opens Shards sockets on each bind address (SO_REUSEPORT when
// there are several, an IPv4 and an IPv6 address to serve both families)
// with batchio.ListenGroup, which fails if another process already serves
// the address, and starts a server on them. A port of 0 is replaced
// by the port the address's first socket got. Close closes the sockets.
func Listen(cfg ServerConfig, sock batchio.Config, binds ...netip.AddrPort) (*Server, error) {
	return ListenWith(cfg, sock, binds)
}

// ListenWith is Listen with more conns served beside the sockets it
// opens, one shard each: a WebTransport conn that serves browsers, for
// example. Close closes the sockets Listen opened, not these.
func ListenWith(cfg ServerConfig, sock batchio.Config, binds []netip.AddrPort, more ...batchio.Conn) (*Server, error) {
	if len(binds) == 0 {
		return nil, errors.New("netcode: Listen needs at least one bind address")
	}
	n, err := cfg.listenShards()
	if err != nil {
		return nil, err
	}
	var conns []batchio.Conn
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for _, bind := range binds {
		// ListenGroup refuses an address another server already serves.
		group, err := batchio.ListenGroup(bind, n, sock)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("netcode: server sockets on %v: %w", bind, err)
		}
		for _, c := range group {
			warnBufferShortfall(cfg.Logger, c)
			warnNoSourceLimit(cfg.Logger, c)
		}
		conns = append(conns, group...)
	}
	cfg.Shards = 0
	s, err := NewServer(cfg, append(conns[:len(conns):len(conns)], more...)...)
	if err != nil {
		closeAll()
		return nil, err
	}
	s.owned = conns
	return s, nil
}

// NewServer starts a server on conns, one shard per conn: sockets (an IPv4
// and an IPv6 one, or several SO_REUSEPORT sockets of one address), an
// in-memory network, a simulator or a fault injector. Each reply goes out
// the conn its request came in on. The server does not close conns it was
// given.
func NewServer(cfg ServerConfig, conns ...batchio.Conn) (*Server, error) {
	if cfg.Shards != 0 {
		return nil, fmt.Errorf("netcode: server config: Shards %d is for Listen; NewServer makes one shard per conn (leave it 0)", cfg.Shards)
	}
	if len(conns) == 0 {
		return nil, errNoConns
	}
	if len(conns) > maxShards {
		return nil, fmt.Errorf("netcode: NewServer: %d conns; allowed 1 to %d (one shard each)", len(conns), maxShards)
	}
	for i, c := range conns {
		if c == nil {
			return nil, fmt.Errorf("netcode: server conn %d is nil", i)
		}
	}
	realClock := cfg.Clock == nil
	if err := cfg.normalize(len(conns)); err != nil {
		return nil, err
	}
	if err := cfg.setPublic(conns); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, conns: append([]batchio.Conn(nil), conns...),
		events: make(chan struct{}, 1), realClock: realClock}
	s.slots = make([]slot, cfg.MaxClients)
	for i := range s.slots {
		s.slots[i].replay.Reset()
	}
	s.adm = newAdmission(cfg.MaxClients, cfg.TokenHistorySize)
	s.owner = make([]atomic.Uint64, cfg.MaxClients)
	mappings := (cfg.MaxEncryptionMappings + len(conns) - 1) / len(conns)
	for i, c := range conns {
		sh, err := newShard(s, i, c, mappings)
		if err != nil {
			return nil, err
		}
		s.shards = append(s.shards, sh)
	}
	if err := s.initReliable(); err != nil {
		return nil, err
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	s.waitTokens()
	return s, nil
}

// start begins a run: the restart rule's bound from the clock, and the
// shard goroutines in the default mode. Under mu, or before the server is
// shared.
func (s *Server) start() error {
	now := s.cfg.Clock()
	minExpire := unixSeconds(now) + uint64((s.cfg.MaxConnectTokenLifetime+ConnectTokenClockSkew)/time.Second)
	for _, sh := range s.shards {
		if err := sh.start(now, minExpire); err != nil {
			return err
		}
	}
	s.startedAt = now
	s.stopped.Store(false)
	s.log.Info("netcode server started",
		slog.Any("public", s.cfg.PublicAddresses), slog.Int("shards", len(s.shards)),
		slog.Int("max_clients", len(s.slots)), slog.String("protocol_id", IDString(s.cfg.ProtocolID)),
		slog.Bool("manual", s.cfg.Manual),
		slog.String("max_connect_token_lifetime", s.cfg.MaxConnectTokenLifetime.String()))
	if !s.cfg.Manual {
		for _, sh := range s.shards {
			s.wg.Add(1)
			go sh.run()
		}
	}
	return nil
}

// Stop ends the current run: every client is disconnected with redundant
// disconnect packets (their disconnect events, DisconnectServerStopped,
// come through Poll), handshakes in progress are forgotten and, in the
// default mode, the shard goroutines exit. Sends fail with
// ErrServerStopped until Start. The connect-token history is kept (the
// reference clears it), so every token consumed before the stop stays
// refused whatever its lifetime: stopping and starting a server never lets
// a token carry a second session.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrServerStopped
	}
	s.stop()
	return nil
}

func (s *Server) stop() {
	if s.stopped.Swap(true) {
		return
	}
	if s.cfg.Manual {
		now := s.cfg.Clock()
		for _, sh := range s.shards {
			sh.stop(now)
			sh.publish()
		}
	} else {
		for _, sh := range s.shards {
			sh.closing.Store(true)
			if sh.waker != nil {
				sh.waker.Wake()
			}
		}
		s.wg.Wait() // each shard stops itself on its way out
	}
	s.signal()
	s.log.Info("netcode server stopped", slog.Any("public", s.cfg.PublicAddresses))
}

// Start starts a stopped server again, like the reference's
// netcode_server_start after netcode_server_stop: with new challenge keys
// and a new restart-rule bound from the clock, and the history of
// consumed tokens kept. Start on a running server returns an error.
//
// Like NewServer and Listen, it returns when tokens minted from then on
// are admitted (see TokensAdmittedFrom).
func (s *Server) Start() error {
	if err := s.startLocked(); err != nil {
		return err
	}
	s.waitTokens()
	return nil
}

func (s *Server) startLocked() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed.Load():
		return ErrServerStopped
	case !s.stopped.Load():
		return errors.New("netcode: Start: the server is running; Stop it first")
	}
	return s.start()
}

// Close stops the server like Stop and closes the sockets Listen opened
// (conns given to NewServer stay open). It returns when every goroutine
// the server started has exited. Further calls do nothing.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	s.stop()
	var errs []error
	for _, c := range s.owned {
		errs = append(errs, c.Close())
	}
	s.owned = nil
	return errors.Join(errs...)
}

// Drain stops admitting clients: from now on connection requests and
// responses are answered as a full server answers them (connection
// denied), Ready reports false, and the clients already connected play
// on. Any goroutine in the default mode. Shutdown drains and then closes.
func (s *Server) Drain() {
	if !s.adm.draining.Swap(true) {
		s.log.Info("netcode server draining", slog.Int("connected", s.NumConnectedClients()))
	}
}

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.adm.draining.Load() }

// Ready reports whether the server serves and admits clients: it is
// running (not stopped, closed or draining).
func (s *Server) Ready() bool {
	return !s.closed.Load() && !s.stopped.Load() && !s.adm.draining.Load()
}

// Live reports whether every shard has made progress within stall of now
// (a shard passes at least every timerScanInterval, 10 ms, when idle; in
// manual mode, when the application calls Update). A stopped server is
// not live.
func (s *Server) Live(stall time.Duration) bool {
	if s.stopped.Load() {
		return false
	}
	now := time.Now().UnixNano()
	for _, sh := range s.shards {
		if now-sh.lastPass.Load() > int64(stall) {
			return false
		}
	}
	return true
}

// Shutdown drains the server gracefully: it stops admitting (Drain), lets
// the connected clients play on until every one has left or ctx is done,
// then closes the server, which disconnects whoever is left with redundant
// disconnect packets. It returns when the server is closed and its
// goroutines have exited; the error is Close's. The application goroutine
// must keep polling meanwhile (a slot frees when its disconnect event is
// polled). Default mode only: a manual-mode server is drained by its own
// loop (Drain, then Close).
func (s *Server) Shutdown(ctx context.Context) error {
	if s.cfg.Manual {
		return ErrManualOnly
	}
	s.Drain()
	tick := time.NewTicker(timerScanInterval)
	defer tick.Stop()
	for s.NumConnectedClients() > 0 && !s.closed.Load() {
		select {
		case <-ctx.Done():
			s.log.Info("netcode server drain: grace period over", slog.Int("disconnecting", s.NumConnectedClients()))
			return s.Close()
		case <-tick.C:
		}
	}
	return s.Close()
}

// Update drives a manual-mode server: every shard reads what is waiting on
// its conn, sends keep-alives, times out silent clients and stale
// handshakes, then flushes what was queued. now is the caller's clock.
// It returns ErrManualOnly in the default mode.
func (s *Server) Update(now time.Time) error {
	if !s.cfg.Manual {
		return ErrManualOnly
	}
	for _, sh := range s.shards {
		sh.pass(now)
		sh.publish()
	}
	return nil
}

// Flush sends what SendPacket, Broadcast and the disconnects queued now,
// instead of at the end of the next Update (manual mode; the default
// mode's shards send on their own).
func (s *Server) Flush() {
	if !s.cfg.Manual {
		return
	}
	for _, sh := range s.shards {
		sh.flush()
	}
}

// Poll calls fn for each event the shards have queued, at most one queue's
// worth per shard, and returns how many it handled. Each shard's events
// come in the order the shard produced them (a client's connect before its
// payloads, its payloads before its disconnect). A disconnected client's
// slot and id are freed after fn returns for its disconnect event. A
// payload may come from a client that has already left (its disconnect
// event follows): a reply to it fails with ErrSlotNotConnected, which a
// game can ignore. Application goroutine only; ev, its UserData and
// Payload are valid only during fn.
func (s *Server) Poll(fn func(ev *Event)) int {
	handled := 0
	for _, sh := range s.shards {
		for range sh.inbox.Cap() + sh.events.Cap() {
			p, hasPayload := sh.inbox.Front()
			e, hasEvent := sh.events.Front()
			switch {
			case hasEvent && (!hasPayload || e.order < p.order):
				sl := &s.slots[e.client]
				s.ev = Event{Kind: e.kind, ClientIndex: int(e.client), ClientID: sl.clientID, UserData: &sl.userData,
					Loopback: sl.loopback, Reason: e.reason}
				if !sl.loopback {
					s.ev.Address = sl.addr
				}
				fn(&s.ev)
				s.ev.UserData = nil
				if e.kind == EventDisconnect {
					s.adm.release(int(e.client), sl.clientID)
				}
				sh.events.Release()
			case hasPayload && p.acks:
				for k := range int(p.n) {
					s.acks[k] = binary.LittleEndian.Uint16(p.data[2*k:])
				}
				s.ev = Event{Kind: EventAcks, ClientIndex: int(p.client), ClientID: s.slots[p.client].clientID,
					Acks: s.acks[:p.n]}
				fn(&s.ev)
				s.ev.Acks = nil
				sh.inbox.Release()
			case hasPayload:
				payload, k := readRecord(sh.inbox, p.data[:], int(p.n), s.gather, inboxData)
				s.ev = Event{Kind: EventPayload, ClientIndex: int(p.client), ClientID: s.slots[p.client].clientID,
					Sequence: p.seq, Payload: payload}
				if payload != nil {
					fn(&s.ev)
				}
				s.ev.Payload = nil
				sh.inbox.ReleaseN(k)
			default:
				goto next
			}
			handled++
		}
	next:
	}
	return handled
}

// pending reports whether a shard has queued something for Poll.
func (s *Server) pending() bool {
	for _, sh := range s.shards {
		if sh.inbox.Len() > 0 || sh.events.Len() > 0 {
			return true
		}
	}
	return false
}

// Wait blocks until there may be something to Poll, the deadline passes,
// or the server is closed. In the default mode that is a shard handing the
// application an event; in manual mode, a datagram arriving on a conn
// (batchio.WaitAny; the caller then runs Update), or an event already
// queued. Application goroutine only.
func (s *Server) Wait(deadline time.Time) {
	if s.pending() || s.closed.Load() {
		return
	}
	if s.cfg.Manual {
		if batchio.WaitAny(deadline, s.conns...) != nil {
			sleepUntil(deadline) // conns that cannot be waited on together
		}
		return
	}
	d := time.Until(deadline)
	if d <= 0 {
		return
	}
	if s.timer == nil {
		s.timer = time.NewTimer(d)
	} else {
		s.timer.Reset(d)
	}
	defer s.timer.Stop()
	select {
	case <-s.events:
	case <-s.timer.C:
	}
}

func sleepUntil(deadline time.Time) {
	if d := time.Until(deadline); d > 0 {
		time.Sleep(d)
	}
}

// signal wakes a Wait.
func (s *Server) signal() {
	select {
	case s.events <- struct{}{}:
	default:
	}
}

// route finds the shard and connection generation of slot i.
func (s *Server) route(i int) (*shard, uint32, error) {
	if i < 0 || i >= len(s.owner) {
		return nil, 0, fmt.Errorf("%w: %d; want 0 to %d", ErrSlotIndex, i, len(s.owner)-1)
	}
	v := s.owner[i].Load()
	if v == 0 {
		return nil, 0, fmt.Errorf("%w: %d", ErrSlotNotConnected, i)
	}
	return s.shards[int(v&0xffffffff)-1], uint32(v >> 32), nil
}

// SendPacket sends a payload of 1 to 1200 bytes to the client in slot
// clientIndex (queued: see Server). Application goroutine only.
//
// With reliable endpoints on (ServerConfig.Reliable) the payload may be up
// to the configured MaxPacketSize and is sent as a reliable packet, cut
// into fragments when it is long; NextSequence tells its sequence first.
func (s *Server) SendPacket(clientIndex int, payload []byte) error {
	if err := s.checkPayload(payload); err != nil {
		return err
	}
	if s.stopped.Load() {
		return ErrServerStopped
	}
	sh, gen, err := s.route(clientIndex)
	if err != nil {
		return err
	}
	if s.cfg.Manual {
		sh.send(clientIndex, payload)
		return nil
	}
	if err := sh.queue(outSend, int32(clientIndex), gen, payload); err != nil {
		return err
	}
	if s.relSeq != nil && !s.slots[clientIndex].loopback {
		s.sentSequence(clientIndex, gen)
	}
	return nil
}

// checkPayload checks the size of a payload to send.
func (s *Server) checkPayload(payload []byte) error {
	if max := s.maxSendBytes(); len(payload) < 1 || len(payload) > max {
		if max == codec.MaxPayloadBytes {
			return fmt.Errorf("%w, got %d", codec.ErrPayloadSize, len(payload))
		}
		return fmt.Errorf("%w: got %d bytes; want 1 to %d (the reliable MaxPacketSize)", codec.ErrPayloadSize, len(payload), max)
	}
	return nil
}

// Broadcast sends a payload of 1 to 1200 bytes to every connected client:
// one queue entry per shard, which sends it to each of its clients.
// Application goroutine only.
//
// With reliable endpoints on, it is a SendPacket to each connected slot
// (each client's packet has its own sequence), so it takes one queue
// record per client, and it returns the first error.
func (s *Server) Broadcast(payload []byte) error {
	if err := s.checkPayload(payload); err != nil {
		return err
	}
	if s.stopped.Load() {
		return ErrServerStopped
	}
	if s.relSeq != nil && !s.cfg.Manual {
		var first error
		for i := range s.owner {
			if s.owner[i].Load() == 0 {
				continue
			}
			if err := s.SendPacket(i, payload); err != nil && first == nil && !errors.Is(err, ErrSlotNotConnected) {
				first = err
			}
		}
		return first
	}
	var errs []error
	for _, sh := range s.shards {
		if s.cfg.Manual {
			sh.broadcast(payload)
		} else if err := sh.queue(outBroadcast, -1, 0, payload); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DisconnectClient disconnects the client in slot clientIndex with
// redundant disconnect packets; its disconnect event
// (DisconnectServerKicked) comes through Poll. Loopback clients leave
// through DisconnectLoopbackClient. Application goroutine only.
func (s *Server) DisconnectClient(clientIndex int) error {
	if s.stopped.Load() {
		return ErrServerStopped
	}
	sh, gen, err := s.route(clientIndex)
	if err != nil {
		return err
	}
	if s.cfg.Manual {
		if s.slots[clientIndex].loopback {
			return fmt.Errorf("%w: %d", ErrSlotIsLoopback, clientIndex)
		}
		sh.setNow(s.cfg.Clock())
		sh.kick(clientIndex)
		return nil
	}
	return sh.queue(outDisconnect, int32(clientIndex), gen, nil)
}

// DisconnectAll disconnects every network client like DisconnectClient.
// Loopback clients stay, as in the reference. Application goroutine only.
func (s *Server) DisconnectAll() error {
	if s.stopped.Load() {
		return ErrServerStopped
	}
	var errs []error
	for _, sh := range s.shards {
		if s.cfg.Manual {
			sh.setNow(s.cfg.Clock())
			sh.kickAll()
		} else if err := sh.queue(outDisconnectAll, -1, 0, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// MaxClients returns the number of client slots.
func (s *Server) MaxClients() int { return len(s.slots) }

// NumConnectedClients returns the number of occupied slots, counting those
// whose disconnect event has not been polled yet.
func (s *Server) NumConnectedClients() int { return s.adm.connected() }

// PublicAddresses returns the addresses clients' tokens must name.
func (s *Server) PublicAddresses() []netip.AddrPort {
	return append([]netip.AddrPort(nil), s.cfg.PublicAddresses...)
}

// LocalAddrs returns the bound address of every shard's conn.
func (s *Server) LocalAddrs() []netip.AddrPort {
	out := make([]netip.AddrPort, len(s.shards))
	for i, sh := range s.shards {
		out[i] = sh.conn.LocalAddr()
	}
	return out
}

// warnNoSourceLimit logs a socket opened without the per-source limit
// it was asked for (batchio.SourceLimit.Optional): eBPF is unavailable.
func warnNoSourceLimit(log *slog.Logger, c batchio.Conn) {
	st, ok := batchio.As[batchio.StatsReader](c)
	if !ok || log == nil {
		return
	}
	if err := st.Stats().SourceLimitErr; err != nil {
		log.Warn("netcode: kernel per-source limit is off on this socket",
			slog.String("addr", c.LocalAddr().String()), slog.Any("error", err))
	}
}

// warnBufferShortfall logs a warning when the kernel granted a socket less
// buffer than asked for (raise net.core.rmem_max/wmem_max, or run with
// CAP_NET_ADMIN): a burst larger than the buffer is dropped by the kernel.
func warnBufferShortfall(log *slog.Logger, c batchio.Conn) {
	st, ok := batchio.As[batchio.StatsReader](c)
	if !ok || log == nil {
		return
	}
	m := st.Stats()
	// Got is 0 where the socket cannot tell.
	if (m.RecvBufferGot == 0 || m.RecvBufferGot >= m.RecvBufferWant) && (m.SendBufferGot == 0 || m.SendBufferGot >= m.SendBufferWant) {
		return
	}
	log.Warn("netcode: kernel granted smaller socket buffers than asked",
		slog.String("addr", c.LocalAddr().String()),
		slog.Int("recv_asked", m.RecvBufferWant), slog.Int("recv_got", m.RecvBufferGot),
		slog.Int("send_asked", m.SendBufferWant), slog.Int("send_got", m.SendBufferGot))
}
