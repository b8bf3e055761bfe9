package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// The protocol-free control: a server and clients that move the same
// datagrams as netbench's netcode runs (the same stamps, sizes, sockets,
// batches and pacing) as plain UDP, with no handshake, no encryption and
// no replay protection. Beside a netcode run it shows the limit of the
// machine and its kernel. Its only protocol is two one-byte datagrams:
const (
	// bareHello is a bare client's connect request and keep-alive (10 Hz
	// while it sends nothing else). A bare game server answers it with
	// one; a bare echo server echoes it, which is as good.
	bareHello byte = 1
	// bareBye is a bare client leaving.
	bareBye byte = 2
)

// Bare server defaults.
const (
	// bareTimeout is how long a bare game server keeps a silent client,
	// as a netcode server keeps one until its token's timeout.
	bareTimeout = 10 * time.Second
	// bareScanInterval is how often it looks for silent clients.
	bareScanInterval = time.Second
	// bareRecvBatches bounds the batches one pass reads, as the engine's
	// manual mode does, so that ticks are not starved.
	bareRecvBatches = 16
	// bareWaitSlice bounds a wait so that Stop is noticed.
	bareWaitSlice = 10 * time.Millisecond
)

// BareConfig configures a BareServer.
type BareConfig struct {
	// Game selects the game shape (ticks and snapshots, as GameServer);
	// otherwise every datagram is echoed as it came.
	Game bool
	// TickHz and SnapshotBytes are the game's, as in GameConfig.
	TickHz        float64
	SnapshotBytes int
	// MaxClients bounds the clients a game server keeps per conn (1 to
	// MaxLoadClients).
	MaxClients int
	// LockOSThread pins each loop's goroutine to its OS thread
	// (blocking-wait sockets).
	LockOSThread bool
}

func (c *BareConfig) check() error {
	if !c.Game {
		return nil
	}
	g := GameConfig{TickHz: c.TickHz, SnapshotBytes: c.SnapshotBytes}
	if err := g.check(); err != nil {
		return err
	}
	if c.MaxClients < 1 || c.MaxClients > MaxLoadClients {
		return fmt.Errorf("bench: bare server for %d clients; want 1 to %d", c.MaxClients, MaxLoadClients)
	}
	return nil
}

// BareServer serves the protocol-free control on its conns, one goroutine
// per conn (the first is Run's own), as an engine server runs a shard per
// conn. It owns the conns and closes them when Run returns.
type BareServer struct {
	cfg   BareConfig
	loops []*bareLoop
	stop  atomic.Bool
	done  chan struct{}
	ticks tickHist
}

// bareLoop is one conn's server.
type bareLoop struct {
	srv  *BareServer
	conn batchio.Conn
	rx   []batchio.Message
	tx   []batchio.Message
	txN  int

	// Game: the clients by address, and their state.
	byAddr   map[netip.AddrPort]int32
	clients  []bareClientState
	clock    tickClock
	lastScan time.Time

	local bareCounts
	pub   struct{ in, out, inputs, snapshots, dropped, connects, ticks, skipped, connected atomic.Uint64 }
}

type bareClientState struct {
	addr      netip.AddrPort
	lastRecv  time.Time
	lastInput uint64
}

type bareCounts struct {
	in, out, inputs, snapshots, dropped, connects, ticks uint64
}

// NewBareServer makes the control server on conns; Run starts it.
func NewBareServer(cfg BareConfig, conns ...batchio.Conn) (*BareServer, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if len(conns) == 0 {
		return nil, errors.New("bench: bare server needs at least one conn")
	}
	s := &BareServer{cfg: cfg, done: make(chan struct{}), ticks: tickHist{h: NewHistogram()}}
	for _, c := range conns {
		b := &bareLoop{srv: s, conn: c,
			rx: batchio.NewMessages(recvBatch, codec.MaxPacketBytes),
			tx: batchio.NewMessages(recvBatch, codec.MaxPacketBytes)}
		if cfg.Game {
			b.byAddr = make(map[netip.AddrPort]int32, cfg.MaxClients)
			b.clients = make([]bareClientState, 0, cfg.MaxClients)
			// The snapshots' filler, once: a tick writes only the stamp and
			// the input sequence, as GameServer reuses one buffer.
			for i := range b.tx {
				for j := range b.tx[i].Buf {
					b.tx[i].Buf[j] = byte(j)
				}
			}
		}
		s.loops = append(s.loops, b)
	}
	return s, nil
}

// recvBatch is the datagrams a bare loop moves per system call, as the
// engine's shards do.
const recvBatch = 64

// Run serves until Stop, then closes the conns.
func (s *BareServer) Run() error {
	defer close(s.done)
	var wg sync.WaitGroup
	for _, b := range s.loops[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.run()
		}()
	}
	s.loops[0].run()
	wg.Wait()
	var errs []error
	for _, b := range s.loops {
		errs = append(errs, b.conn.Close())
	}
	return errors.Join(errs...)
}

// Stop asks Run to return; it notices within bareWaitSlice.
func (s *BareServer) Stop() {
	s.stop.Store(true)
	for _, b := range s.loops {
		if w, ok := batchio.As[batchio.Waker](b.conn); ok {
			w.Wake()
		}
	}
}

// Wait blocks until Run has returned.
func (s *BareServer) Wait() { <-s.done }

// TakeTicks returns the percentiles and count of the tick durations since
// the last call (every loop's), and starts over.
func (s *BareServer) TakeTicks() (Percentiles, int64) { return s.ticks.take() }

// Counters sums the loops' counters (as of each loop's last pass).
func (s *BareServer) Counters() ServerCounters {
	var c ServerCounters
	for _, b := range s.loops {
		p := &b.pub
		c.PacketsIn += p.in.Load()
		c.PacketsOut += p.out.Load()
		c.Inputs += p.inputs.Load()
		c.Snapshots += p.snapshots.Load()
		c.Dropped += p.dropped.Load()
		c.Connects += p.connects.Load()
		c.Ticks += p.ticks.Load()
		c.TicksSkipped += p.skipped.Load()
		c.Connected += int(p.connected.Load())
		if st, ok := batchio.As[batchio.StatsReader](b.conn); ok {
			m := st.Stats()
			c.RecvCalls += m.RecvCalls
			c.SendCalls += m.SendCalls
			c.Parks += m.Waits
		}
	}
	if !s.cfg.Game {
		c.Echoed = c.PacketsOut
	}
	return c
}

// DropReasons: the bare server drops only datagrams of a shape it does
// not know, or from clients beyond MaxClients.
func (s *BareServer) DropReasons() map[string]uint64 {
	if d := s.Counters().Dropped; d > 0 {
		return map[string]uint64{"bare: unknown datagram or no room": d}
	}
	return nil
}

func (b *bareLoop) run() {
	if b.srv.cfg.LockOSThread {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	now := time.Now()
	b.clock = newTickClock(now, max(b.srv.cfg.TickHz, 1))
	b.lastScan = now
	if b.srv.cfg.Game {
		b.runGame()
		return
	}
	for !b.srv.stop.Load() {
		now := time.Now()
		busy, err := b.step(now)
		if err != nil {
			return
		}
		if busy {
			continue
		}
		if errors.Is(b.conn.WaitRead(now.Add(bareWaitSlice)), batchio.ErrClosed) {
			return
		}
	}
}

// runGame reads and ticks as the manual-mode GameServer does: at each
// tick and readsPerTick times per interval.
func (b *bareLoop) runGame() {
	every := b.clock.interval / readsPerTick
	nextRead := time.Now()
	for !b.srv.stop.Load() {
		now := time.Now()
		if !now.Before(nextRead) || !now.Before(b.clock.deadline()) {
			for range 64 { // drain, within a bound
				busy, err := b.step(now)
				if err != nil {
					return
				}
				if !busy {
					break
				}
			}
			nextRead = now.Add(every)
		}
		if d := time.Until(minTime(nextRead, b.clock.deadline())); d > 0 {
			time.Sleep(d)
		}
	}
}

// step is one pass at now: read (and, echoing, answer) what is waiting,
// run the tick if due, flush. busy reports that the socket may hold more.
func (b *bareLoop) step(now time.Time) (busy bool, err error) {
	for range bareRecvBatches {
		n, err := b.conn.ReadBatch(b.rx)
		if err != nil {
			return false, err
		}
		b.local.in += uint64(n)
		if b.srv.cfg.Game {
			for i := range b.rx[:n] {
				b.handle(b.rx[i].Buf[:b.rx[i].N], b.rx[i].Addr, now)
			}
		} else if n > 0 {
			sent, _ := b.conn.WriteBatch(b.rx[:n])
			b.local.out += uint64(max(sent, 0))
		}
		busy = n == len(b.rx)
		if !busy {
			break
		}
	}
	if b.srv.cfg.Game {
		if k, ok := b.clock.due(now); ok {
			b.tick(now, k)
		}
		if now.Sub(b.lastScan) >= bareScanInterval {
			b.lastScan = now
			b.expire(now)
		}
	}
	b.flush()
	b.publish()
	return busy, nil
}

// handle takes one datagram of a game: a hello (answered), a bye, or an
// input (at least StampBytes). Anything else is dropped.
func (b *bareLoop) handle(d []byte, from netip.AddrPort, now time.Time) {
	switch {
	case len(d) == 1 && d[0] == bareHello:
		if i := b.client(from, now); i >= 0 {
			b.queue()[0] = bareHello // byte 0 of the filler: a stamp overwrites it
			b.commit(1, from)
			return
		}
	case len(d) == 1 && d[0] == bareBye:
		if i, ok := b.byAddr[from]; ok {
			b.remove(i)
			return
		}
	case len(d) >= StampBytes:
		if i := b.client(from, now); i >= 0 {
			b.local.inputs++
			_, b.clients[i].lastInput, _ = ReadStamp(d)
			return
		}
	}
	b.local.dropped++
}

// client returns the index of the client at addr, adding it if there is
// room (-1 if not), and marks it heard from.
func (b *bareLoop) client(addr netip.AddrPort, now time.Time) int32 {
	i, ok := b.byAddr[addr]
	if !ok {
		if len(b.clients) == cap(b.clients) {
			return -1
		}
		i = int32(len(b.clients))
		b.clients = append(b.clients, bareClientState{addr: addr})
		b.byAddr[addr] = i
		b.local.connects++
	}
	b.clients[i].lastRecv = now
	return i
}

// remove forgets client i, moving the last one into its place.
func (b *bareLoop) remove(i int32) {
	delete(b.byAddr, b.clients[i].addr)
	last := int32(len(b.clients) - 1)
	if i != last {
		b.clients[i] = b.clients[last]
		b.byAddr[b.clients[i].addr] = i
	}
	b.clients = b.clients[:last]
}

func (b *bareLoop) expire(now time.Time) {
	for i := int32(len(b.clients)) - 1; i >= 0; i-- {
		if now.Sub(b.clients[i].lastRecv) > bareTimeout {
			b.remove(i)
		}
	}
}

// tick sends every client its snapshot of tick k, laid out as GameServer's.
func (b *bareLoop) tick(start time.Time, k uint64) {
	stamp := time.Now().UnixNano()
	size := b.srv.cfg.SnapshotBytes
	for i := range b.clients {
		c := &b.clients[i]
		p := b.queue()[:size]
		PutSnapshotStamp(p, stamp, k)
		if size >= snapshotInputOffset+8 {
			binary.LittleEndian.PutUint64(p[snapshotInputOffset:], c.lastInput)
		}
		b.commit(size, c.addr)
	}
	b.local.snapshots += uint64(len(b.clients))
	b.flush()
	b.local.ticks++
	b.srv.ticks.record(time.Since(start))
}

// queue returns the buffer of the next outgoing datagram, sending the
// batch first if it is full.
func (b *bareLoop) queue() []byte {
	if b.txN == len(b.tx) {
		b.flush()
	}
	return b.tx[b.txN].Buf
}

func (b *bareLoop) commit(n int, to netip.AddrPort) {
	b.tx[b.txN].N, b.tx[b.txN].Addr = n, to
	b.txN++
}

func (b *bareLoop) flush() {
	if b.txN == 0 {
		return
	}
	sent, _ := b.conn.WriteBatch(b.tx[:b.txN])
	b.local.out += uint64(max(sent, 0))
	b.txN = 0
}

func (b *bareLoop) publish() {
	p := &b.pub
	p.in.Store(b.local.in)
	p.out.Store(b.local.out)
	p.inputs.Store(b.local.inputs)
	p.snapshots.Store(b.local.snapshots)
	p.dropped.Store(b.local.dropped)
	p.connects.Store(b.local.connects)
	p.ticks.Store(b.local.ticks)
	p.skipped.Store(b.clock.skipped)
	p.connected.Store(uint64(len(b.clients)))
}
