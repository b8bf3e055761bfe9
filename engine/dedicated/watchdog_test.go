package dedicated

import (
	"bytes"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a monotonic clock the test moves.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Duration      { return time.Duration(c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// fakeWatchdog is a watchdog on a clock the test moves.
func fakeWatchdog(stall time.Duration) (*watchdog, *fakeClock, *bytes.Buffer) {
	var logs bytes.Buffer
	c := new(fakeClock)
	w := newWatchdog(stall, slog.New(slog.NewTextHandler(&logs, nil)))
	w.clock = c.now
	return w, c, &logs
}

// The game is hung once one call has lasted the bound, not before; idle
// time between calls never counts; a call that returns makes it live
// again; each transition is logged once.
func TestWatchdog(t *testing.T) {
	w, now, logs := fakeWatchdog(time.Second)
	now.advance(time.Hour) // idle for an hour: a slow tick rate, not a hang
	if !w.live() || w.stuck() != 0 {
		t.Fatalf("idle: live %v, stuck %v; want live, 0", w.live(), w.stuck())
	}
	w.enter()
	now.advance(time.Second - time.Nanosecond)
	if !w.live() {
		t.Fatal("a call 1ns short of the bound: not live; want live")
	}
	now.advance(time.Nanosecond)
	if w.live() {
		t.Fatal("a call as long as the bound: live; want hung")
	}
	now.advance(time.Minute)
	if w.live() || w.stuck() != time.Minute+time.Second {
		t.Fatalf("still in the call: live %v, stuck %v", w.live(), w.stuck())
	}
	w.leave()
	if !w.live() {
		t.Fatal("the call returned: not live; want live")
	}
	w.enter() // a new call starts its own count
	now.advance(500 * time.Millisecond)
	if !w.live() {
		t.Fatal("a new call of half the bound: not live")
	}
	if n := strings.Count(logs.String(), "the game is hung"); n != 1 {
		t.Errorf("%d hung lines; want 1:\n%s", n, logs)
	}
	if n := strings.Count(logs.String(), "live again"); n != 1 {
		t.Errorf("%d recovery lines; want 1:\n%s", n, logs)
	}
}

// waitLoop returns true when the loop ends, false at once for a hung game
// and, for a game in a call, as soon as that call makes it hung.
func TestWatchdogWaitLoop(t *testing.T) {
	w, now, _ := fakeWatchdog(time.Second)
	done := make(chan struct{})
	close(done)
	if !w.waitLoop(done, time.Millisecond) {
		t.Fatal("loop ended: waitLoop false")
	}

	w.enter()
	now.advance(time.Second)
	never := make(chan struct{})
	if w.waitLoop(never, time.Hour) { // a poll of an hour: it must not wait
		t.Fatal("hung game: waitLoop true")
	}

	w, now, _ = fakeWatchdog(time.Second)
	w.enter()
	res := make(chan bool, 1)
	go func() { res <- w.waitLoop(never, time.Millisecond) }()
	select {
	case <-res:
		t.Fatal("waitLoop returned while the call was within the bound")
	case <-time.After(20 * time.Millisecond):
	}
	now.advance(time.Second)
	select {
	case ok := <-res:
		if ok {
			t.Fatal("waitLoop true for a game that became hung")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waitLoop did not return once the game was hung")
	}
}
