package dedicated

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/engine"
)

// observer records a tick's duration in seconds (a prometheus.Histogram).
type observer interface{ Observe(float64) }

// loop is the application goroutine: it polls the server's events into
// the game, runs the game's ticks and keeps the player set for Agones.
// Nothing in it allocates once the player set is sized.
type loop struct {
	srv     *engine.Server
	game    Game
	acks    AckGame // game, when it takes acks
	period  time.Duration
	tick    observer
	players *players // nil without Agones
	watch   *watchdog
	stop    atomic.Bool
	handle  func(*engine.Event) // l.dispatch, bound once
}

func newLoop(srv *engine.Server, game Game, rate float64, tick observer, p *players, w *watchdog) *loop {
	l := &loop{srv: srv, game: game, period: time.Duration(float64(time.Second) / rate), tick: tick, players: p, watch: w}
	l.acks, _ = game.(AckGame)
	l.handle = l.dispatch
	return l
}

// run serves until stop is set (after the server is closed), then polls
// once more so the game sees the disconnects of the close.
func (l *loop) run() {
	next := time.Now().Add(l.period)
	for {
		l.poll()
		if now := time.Now(); !now.Before(next) {
			l.watch.enter()
			l.game.Tick(l.srv, now)
			l.watch.leave()
			l.tick.Observe(time.Since(now).Seconds())
			// A late tick is not made up for: the next is a period after
			// this one at the latest.
			next = next.Add(l.period)
			if next.Before(now) {
				next = now.Add(l.period)
			}
		}
		if l.stop.Load() {
			l.poll()
			return
		}
		l.srv.Wait(next)
	}
}

// poll hands the pending events to the game, under the watchdog.
func (l *loop) poll() {
	l.watch.enter()
	l.srv.Poll(l.handle)
	l.watch.leave()
}

func (l *loop) dispatch(ev *engine.Event) {
	switch ev.Kind {
	case engine.EventConnect:
		if l.players != nil {
			l.players.add(l.srv.MaxClients(), ev.ClientIndex, ev.ClientID)
		}
		l.game.Connect(l.srv, ev)
	case engine.EventDisconnect:
		if l.players != nil {
			l.players.remove(ev.ClientIndex)
		}
		l.game.Disconnect(l.srv, ev)
	case engine.EventPayload:
		l.game.Payload(l.srv, ev)
	case engine.EventAcks:
		if l.acks != nil {
			l.acks.Acks(l.srv, ev)
		}
	}
}

// players is the set of connected client ids, written by the loop and
// read by the Agones player sync.
type players struct {
	mu  sync.Mutex
	set clientSet
}

func (p *players) add(maxClients, slot int, id uint64) {
	p.mu.Lock()
	p.set.add(maxClients, slot, id)
	p.mu.Unlock()
}

func (p *players) remove(slot int) {
	p.mu.Lock()
	p.set.remove(slot)
	p.mu.Unlock()
}

// ids appends the connected client ids to dst.
func (p *players) ids(dst []uint64) []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append(dst, p.set.ids...)
}
