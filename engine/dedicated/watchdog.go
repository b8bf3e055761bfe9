package dedicated

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// watchdog tells whether the game is hung: the loop marks when it enters
// the game's code (Tick or the events of a Poll) and when it leaves, and
// the game is hung once one entry has lasted stall. The loop's idle waits
// between ticks are not game time, so a slow tick rate is never mistaken
// for a hang, and a game without a tick is watched through its events.
type watchdog struct {
	stall time.Duration
	clock func() time.Duration // monotonic; time since the watchdog began
	log   *slog.Logger

	busy atomic.Int64 // clock reading at entry, plus one; 0: not in the game
	hung atomic.Bool  // the last answer, for logging transitions
}

func newWatchdog(stall time.Duration, log *slog.Logger) *watchdog {
	start := time.Now()
	return &watchdog{stall: stall, log: log, clock: func() time.Duration { return time.Since(start) }}
}

// enter and leave bracket the game's code; only the loop calls them.
func (w *watchdog) enter() { w.busy.Store(int64(w.clock()) + 1) }
func (w *watchdog) leave() { w.busy.Store(0) }

// stuck returns how long the game has been in one call, 0 when it is not
// in one.
func (w *watchdog) stuck() time.Duration {
	b := w.busy.Load()
	if b == 0 {
		return 0
	}
	return max(w.clock()-time.Duration(b-1), 0)
}

// live reports whether the game is not hung, and logs the transitions.
func (w *watchdog) live() bool {
	d := w.stuck()
	hung := d >= w.stall
	if w.hung.Swap(hung) != hung {
		if hung {
			w.log.Error("netcode dedicated server: the game is hung; reporting not live",
				slog.Duration("in_call_for", d), slog.Duration("bound", w.stall))
		} else {
			w.log.Info("netcode dedicated server: the game returned; live again")
		}
	}
	return !hung
}

// waitLoop waits for the loop to end (done closed), but no longer than
// until the game is hung: a hung game never returns, and Run must keep
// its bound. It reports whether the loop ended. poll is how often the
// watchdog is asked while waiting.
func (w *watchdog) waitLoop(done <-chan struct{}, poll time.Duration) bool {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if !w.live() {
			select { // it may have returned just now
			case <-done:
				return true
			default:
				return false
			}
		}
		select {
		case <-done:
			return true
		case <-t.C:
		}
	}
}
