package bench

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/reliable"
)

// Game-mode limits.
const (
	// MaxTickHz bounds GameConfig.TickHz.
	MaxTickHz = 1000
	// snapshotInputOffset is where a snapshot carries the client's latest
	// input sequence (when the snapshot is long enough).
	snapshotInputOffset = StampBytes
)

// GameConfig configures a GameServer.
type GameConfig struct {
	// Manual is the server's ServerConfig.Manual: Run drives it.
	Manual bool
	// LockOSThread pins Run's goroutine to its OS thread (a manual server
	// on blocking-wait sockets).
	LockOSThread bool
	// TickHz is the tick rate (more than 0, at most MaxTickHz).
	TickHz float64
	// SnapshotBytes is each snapshot's size: StampBytes to 1200, or with
	// Reliable to its MaxPacketSize (sent as fragments when long).
	SnapshotBytes int
	// Reliable is the server's ServerConfig.Reliable (nil: off).
	Reliable *reliable.Config
}

func (c *GameConfig) check() error {
	if !(c.TickHz > 0 && c.TickHz <= MaxTickHz) {
		return fmt.Errorf("bench: tick rate %g Hz; want more than 0 and at most %d", c.TickHz, MaxTickHz)
	}
	if n := maxPayload(c.Reliable); c.SnapshotBytes < StampBytes || c.SnapshotBytes > n {
		return fmt.Errorf("bench: snapshot of %d bytes; want %d to %d", c.SnapshotBytes, StampBytes, n)
	}
	return nil
}

// GameServer is the application of an engine.Server that plays a game's
// network shape: every tick (TickHz) it sends each connected client a
// snapshot of its own, stamped as PutSnapshotStamp describes, and between
// ticks it takes the clients' inputs. One goroutine (Run) does it all, as
// a game's main loop would; in manual mode it also drives the server.
type GameServer struct {
	srv    *engine.Server
	cfg    GameConfig
	stop   atomic.Bool
	done   chan struct{}
	handle func(*engine.Event)

	// Run's goroutine only.
	active    []int32  // connected slots
	pos       []int32  // slot -> index in active, -1: not connected
	lastInput []uint64 // slot -> the latest input's stamp sequence
	snap      []byte
	clock     tickClock
	local     struct{ inputs, snapshots, sendErrors, ticks uint64 }

	pub   gameCounts // published once per tick
	ticks tickHist
}

// gameCounts are a game server's own counters, for other goroutines.
type gameCounts struct {
	inputs, snapshots, sendErrors, ticks, skipped atomic.Uint64
}

// tickHist is a histogram of tick durations, written by the server's
// goroutine once per tick and read and reset by another.
type tickHist struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

func (t *tickHist) record(d time.Duration) {
	t.mu.Lock()
	RecordLatency(t.h, d)
	t.mu.Unlock()
}

// take returns the percentiles and count of the durations recorded since
// the last take and starts over. It does not allocate.
func (t *tickHist) take() (Percentiles, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, n := PercentilesOf(t.h), t.h.TotalCount()
	t.h.Reset()
	return p, n
}

// NewGameServer makes the game application of srv; Run starts it.
func NewGameServer(srv *engine.Server, cfg GameConfig) (*GameServer, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	n := srv.MaxClients()
	g := &GameServer{srv: srv, cfg: cfg, done: make(chan struct{}),
		active: make([]int32, 0, n), pos: make([]int32, n), lastInput: make([]uint64, n),
		snap: make([]byte, cfg.SnapshotBytes), ticks: tickHist{h: NewHistogram()}}
	for i := range g.pos {
		g.pos[i] = -1
	}
	for i := StampBytes; i < len(g.snap); i++ {
		g.snap[i] = byte(i)
	}
	g.handle = g.onEvent // made once: Poll must not allocate a closure per call
	return g, nil
}

// Server returns the engine server.
func (g *GameServer) Server() *engine.Server { return g.srv }

func (g *GameServer) onEvent(ev *engine.Event) {
	i := int32(ev.ClientIndex)
	switch ev.Kind {
	case engine.EventConnect:
		if g.pos[i] < 0 {
			g.pos[i] = int32(len(g.active))
			g.active = append(g.active, i)
			g.lastInput[i] = 0
		}
	case engine.EventDisconnect:
		if p := g.pos[i]; p >= 0 {
			last := g.active[len(g.active)-1]
			g.active[p], g.pos[last] = last, p
			g.active = g.active[:len(g.active)-1]
			g.pos[i] = -1
		}
	case engine.EventPayload:
		g.local.inputs++
		if _, seq, ok := ReadStamp(ev.Payload); ok {
			g.lastInput[i] = seq
		}
	}
}

// Run plays until Stop, then closes the server (disconnecting the
// clients) and returns its error.
func (g *GameServer) Run() error {
	defer close(g.done)
	if g.cfg.LockOSThread {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	g.clock = newTickClock(time.Now(), g.cfg.TickHz)
	if g.cfg.Manual {
		g.runManual()
		return g.srv.Close()
	}
	for !g.stop.Load() {
		now := time.Now()
		in := g.srv.Poll(g.handle)
		if tick, ok := g.clock.due(now); ok {
			g.tick(now, tick)
			continue
		}
		if in > 0 {
			continue // busy: look for more before paying for a park
		}
		g.srv.Wait(g.clock.deadline())
	}
	return g.srv.Close()
}

// readsPerTick is how often per tick interval a manual-mode game server
// reads its socket, besides at each tick.
const readsPerTick = 8

// runManual is Run's loop in manual mode, shaped like a game's main loop
// (and the reference's netcode_server_update): the server reads its
// socket at each tick and readsPerTick times in between, not as each
// input arrives, so the kernel hands it the inputs in full batches (64
// per recvmmsg) instead of one or two at a time. An input waits at most
// an eighth of a tick for its read, and the game uses it at the next
// tick anyway; the socket's buffer holds an eighth of a tick's inputs.
func (g *GameServer) runManual() {
	every := g.clock.interval / readsPerTick
	nextRead := time.Now()
	for !g.stop.Load() {
		now := time.Now()
		if tick, ok := g.clock.due(now); ok {
			g.drain(now, now.Add(g.clock.interval/4))
			g.tick(now, tick)
			nextRead = now.Add(every)
			continue
		}
		if !now.Before(nextRead) {
			g.drain(now, g.clock.deadline())
			nextRead = now.Add(every)
		}
		if d := time.Until(minTime(nextRead, g.clock.deadline())); d > 0 {
			time.Sleep(d)
		}
	}
}

// drain runs the server's passes (manual mode), polling after each,
// until a pass brings less than a batch of events (the socket was empty
// when it read), after drainPasses, or once until has passed. With
// inputs arriving all the time a pass seldom brings none, and waiting
// for one made reads between ticks run into the next tick (up to 230 ms
// seen at 2,304 players), which was then skipped.
func (g *GameServer) drain(now, until time.Time) {
	for range drainPasses {
		_ = g.srv.Update(now) // manual by construction
		if g.srv.Poll(g.handle) < drainBusy || !time.Now().Before(until) {
			return
		}
	}
}

const (
	// drainPasses bounds one drain's passes.
	drainPasses = 64
	// drainBusy is a batch of events: a pass that brought fewer found
	// the socket empty before it was done.
	drainBusy = 64
)

// tick sends every connected client its snapshot of tick k. Its duration,
// from start (before the pass that read the inputs) to the last send
// handed to the server (flushed, in manual mode), goes into the tick
// histogram. In the default mode the shard seals and sends concurrently,
// so there it measures the application's share.
func (g *GameServer) tick(start time.Time, k uint64) {
	stamp := time.Now().UnixNano()
	var sent, failed uint64
	for _, i := range g.active {
		PutSnapshotStamp(g.snap, stamp, k)
		if len(g.snap) >= snapshotInputOffset+8 {
			binary.LittleEndian.PutUint64(g.snap[snapshotInputOffset:], g.lastInput[i])
		}
		if g.srv.SendPacket(int(i), g.snap) == nil {
			sent++
		} else {
			failed++
		}
	}
	if g.cfg.Manual {
		g.srv.Flush()
	}
	g.ticks.record(time.Since(start))
	g.local.snapshots += sent
	g.local.sendErrors += failed
	g.local.ticks++
	g.publish()
}

func (g *GameServer) publish() {
	g.pub.inputs.Store(g.local.inputs)
	g.pub.snapshots.Store(g.local.snapshots)
	g.pub.sendErrors.Store(g.local.sendErrors)
	g.pub.ticks.Store(g.local.ticks)
	g.pub.skipped.Store(g.clock.skipped)
}

// Stop asks Run to return, like EchoServer.Stop.
func (g *GameServer) Stop() {
	g.stop.Store(true)
	if !g.cfg.Manual {
		_ = g.srv.Close()
	}
}

// Wait blocks until Run has returned.
func (g *GameServer) Wait() { <-g.done }

// TakeTicks returns the percentiles and count of the tick durations since
// the last call, and starts over.
func (g *GameServer) TakeTicks() (Percentiles, int64) { return g.ticks.take() }

// Counters sums the shards' counters and the game's own (as of the last
// tick).
func (g *GameServer) Counters() ServerCounters {
	c := serverCounters(g.srv.Stats())
	c.Inputs = g.pub.inputs.Load()
	c.Snapshots = g.pub.snapshots.Load()
	c.SendErrors = g.pub.sendErrors.Load()
	c.Ticks = g.pub.ticks.Load()
	c.TicksSkipped = g.pub.skipped.Load()
	return c
}

// DropReasons returns the server's drop counts by reason name.
func (g *GameServer) DropReasons() map[string]uint64 { return DropReasons(g.srv.Stats()) }

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// GameQueueSize is the engine queue size (ServerConfig.EventQueueSize and
// SendQueueSize) a game server of maxClients slots needs: room for two
// ticks' inputs, and for a whole tick's snapshots of snapshotBytes queued
// at once (see QueueSize).
func GameQueueSize(maxClients, snapshotBytes int) int { return QueueSize(2*maxClients, snapshotBytes) }
