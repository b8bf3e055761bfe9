package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// server is one dedicated server of the fleet: a netcode-server process
// (the script) or one in the test's process.
type server interface {
	// Name is how the timeline calls it.
	Name() string
	// Addr is its public UDP address, as tokens list it.
	Addr() netip.AddrPort
	// Kill ends it at once: no disconnect packets, its endpoints gone
	// (SIGKILL).
	Kill() error
	// Drain begins the graceful drain (SIGTERM) and returns at once.
	Drain() error
	// Done is closed once it has stopped; Err then says how.
	Done() <-chan struct{}
	Err() error
}

// fleet is what the scenario runs against.
type fleet struct {
	servers  []server
	tokenURL string // POST here for a token
	ids      []identity
	// issued, if set, reads the token service's own count of tokens
	// issued and requests refused.
	issued func() (issued, refused int, err error)
}

// identity is a player's client id and bearer secret.
type identity struct {
	id     uint64
	secret string
}

// newIdentities makes n players' identities: client ids from 1001 and
// random secrets.
func newIdentities(n int) []identity {
	ids := make([]identity, n)
	for i := range ids {
		var b [16]byte
		_, _ = rand.Read(b[:])
		ids[i] = identity{id: uint64(1001 + i), secret: hex.EncodeToString(b[:])}
	}
	return ids
}

// secretsFile is the token service's -secrets-file for ids.
func secretsFile(ids []identity) string {
	var b strings.Builder
	b.WriteString("# CLIENT_ID SECRET, one player a line (scripts/fleet)\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "%d %s\n", id.id, id.secret)
	}
	return b.String()
}

// scenario is the run's shape.
type scenario struct {
	Rate    float64       // payloads per second per player
	Ramp    time.Duration // players start spread over this
	Warmup  time.Duration // play before the kill
	Pause   time.Duration // between the kill's recovery and the drain
	Settle  time.Duration // play after the drain's recovery
	Recover time.Duration // bound on connecting everyone, and on each recovery
	Grace   time.Duration // the servers' drain grace, for the timeline
	// Churn is how many players a second leave and join again with a
	// fresh token, from all connected until the drain's recovery, so that
	// tokens are asked for while servers die and drain.
	Churn float64
	// Cache is how long after a server is lost the directory may still
	// offer it: a round of probes may start just before the loss and take
	// up to the probe timeout, then be reused for the cache time; with a
	// margin for the answer's way to the player. Tokens issued later must
	// not list it.
	Cache time.Duration
}

// check says what is wrong with s.
func (s scenario) check() error {
	switch {
	case !(s.Rate > 0 && s.Rate <= 1000):
		return fmt.Errorf("rate %v: allowed above 0 up to 1000 payloads per second", s.Rate)
	case s.Ramp < 0 || s.Warmup < 0 || s.Pause < 0 || s.Settle < time.Second:
		return errors.New("ramp, warmup and pause must not be negative, and settle must be at least 1s (players must be seen playing)")
	case s.Recover < time.Second:
		return fmt.Errorf("recover %v: want at least 1s", s.Recover)
	case !(s.Churn >= 0 && s.Churn <= 1000):
		return fmt.Errorf("churn %v: allowed 0 to 1000 rejoins per second", s.Churn)
	case s.Settle < time.Duration(4*float64(time.Second)/s.Rate):
		return fmt.Errorf("settle %v at %g payloads/s: want at least 4 payload periods, so that every player is seen playing in its second half", s.Settle, s.Rate)
	case s.Cache <= 0:
		return fmt.Errorf("cache %v: want the directory's cache time plus its probe timeout and a margin, above 0", s.Cache)
	}
	return nil
}

// report is the run's result.
type report struct {
	players      int
	kill, drain  *event
	killOutcome  outcome
	drainOutcome outcome
	drainExit    time.Duration // from the drain to the server's exit
	drainErr     error
	playing      int // players seen playing at the end
	connects     int
	fallbacks    int
	rejoins      int
	issued       int
	refused      map[int]int
	failed       int
	wrongID      int
	svcIssued    int // the service's own counts; -1 unknown
	svcRefused   int
	sent, echoed uint64
	elapsed      time.Duration
	names        map[netip.AddrPort]string // the servers' names, in start order
	order        []netip.AddrPort
	failures     []string
}

// timeline prints timestamped lines as the run goes.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func (t *timeline) log(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "  %+8.3fs  %s\n", time.Since(t.start).Seconds(), fmt.Sprintf(format, args...))
}

// run plays the scenario: players join over the ramp, play, the server
// with the most players is killed, the next busiest drained, and every
// player must be back on a survivor. Failed checks are in the report's
// failures; the error is for a run that could not go on.
func run(ctx context.Context, f *fleet, sc scenario, hc *http.Client, out io.Writer, start time.Time) (*report, error) {
	if err := sc.check(); err != nil {
		return nil, err
	}
	if len(f.servers) < 3 {
		return nil, fmt.Errorf("%d servers; want at least 3: one killed, one drained, one left", len(f.servers))
	}
	tl := &timeline{w: out, start: start}
	rec := newRecorder(len(f.ids))
	addrs := make([]netip.AddrPort, len(f.servers))
	for i, s := range f.servers {
		addrs[i] = s.Addr()
	}
	census := func() string {
		per, _ := rec.census(addrs)
		parts := make([]string, len(per))
		for i, n := range per {
			parts[i] = fmt.Sprintf("%s %d", f.servers[i].Name(), n)
		}
		return strings.Join(parts, ", ")
	}

	players := make([]*player, len(f.ids))
	for i, id := range f.ids {
		p, err := newPlayer(i, id, f.tokenURL, hc, rec, sc.Rate)
		if err != nil {
			for _, p := range players[:i] {
				p.conn.Close()
			}
			return nil, err
		}
		players[i] = p
	}
	playCtx, stopPlay := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopPlay()
		wg.Wait()
	}()
	tl.log("%d players joining over %v, %g payloads/s each", len(players), sc.Ramp, sc.Rate)
	for i, p := range players {
		delay := time.Duration(0)
		if len(players) > 1 {
			delay = sc.Ramp * time.Duration(i) / time.Duration(len(players)-1)
		}
		wg.Go(func() {
			sleep(playCtx, delay)
			p.run(playCtx)
		})
	}

	r := &report{players: len(players), svcIssued: -1, svcRefused: -1, names: make(map[netip.AddrPort]string), order: addrs}
	for i, s := range f.servers {
		r.names[addrs[i]] = s.Name()
	}
	failf := func(format string, args ...any) { r.failures = append(r.failures, fmt.Sprintf(format, args...)) }
	joined := time.Now()
	if !waitFor(ctx, sc.Ramp+sc.Recover, func() bool { return rec.everConnected() == len(players) }) {
		n := rec.everConnected()
		failf("only %d of %d players connected within %v", n, len(players), sc.Ramp+sc.Recover)
		tl.log("only %d of %d players connected: %s", n, len(players), census())
		return r, ctx.Err()
	}
	tl.log("all %d players connected (%.1f s): %s", len(players), time.Since(joined).Seconds(), census())
	ch := &churn{servers: addrs}
	churnCtx, stopChurn := context.WithCancel(ctx)
	churnDone := make(chan struct{})
	go func() {
		defer close(churnDone)
		ch.run(churnCtx, sc.Churn, rec, players)
	}()
	defer func() {
		stopChurn()
		<-churnDone
	}()
	if sc.Churn > 0 {
		tl.log("players leave and rejoin with a fresh token, %g a second", sc.Churn)
	}
	sleep(ctx, sc.Warmup)

	alive := slices.Clone(f.servers)
	ch.hold(ctx, rec, sc.Recover)
	r.kill = pickBusiest("kill", alive, rec)
	tl.log("kill %s (SIGKILL): %d players on it; %s", r.kill.name, len(r.kill.affected), census())
	err := serverOf(alive, r.kill).Kill()
	ch.release(r.kill.server)
	if err != nil {
		return r, fmt.Errorf("kill %s: %w", r.kill.name, err)
	}
	alive = slices.DeleteFunc(alive, func(s server) bool { return s.Addr() == r.kill.server })
	if !waitFor(ctx, sc.Recover, func() bool { return rec.backAll(r.kill) }) {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		failf("kill: players of %s not back on a survivor within %v", r.kill.name, sc.Recover)
	}
	tl.log("kill: %d players of %s back elsewhere; %s", len(r.kill.affected), r.kill.name, census())
	sleep(ctx, sc.Pause)

	ch.hold(ctx, rec, sc.Recover)
	r.drain = pickBusiest("drain", alive, rec)
	drained := serverOf(alive, r.drain)
	tl.log("drain %s (SIGTERM, grace %v): %d players on it; %s", r.drain.name, sc.Grace, len(r.drain.affected), census())
	err = drained.Drain()
	ch.release(r.drain.server)
	if err != nil {
		return r, fmt.Errorf("drain %s: %w", r.drain.name, err)
	}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-drained.Done():
			r.drainExit = time.Since(r.drain.at)
			r.drainErr = drained.Err()
			tl.log("drain: %s exited (%v)", r.drain.name, exitText(r.drainErr))
		case <-ctx.Done():
		case <-time.After(sc.Grace + sc.Recover):
		}
	}()
	if !waitFor(ctx, sc.Grace+sc.Recover, func() bool { return rec.backAll(r.drain) }) {
		if ctx.Err() != nil {
			<-exited
			return r, ctx.Err()
		}
		failf("drain: players of %s not back on a survivor within %v", r.drain.name, sc.Grace+sc.Recover)
	}
	tl.log("drain: %d players of %s back elsewhere; %s", len(r.drain.affected), r.drain.name, census())
	<-exited
	switch {
	case r.drainExit == 0:
		failf("drain: %s had not exited %v after SIGTERM", r.drain.name, sc.Grace+sc.Recover)
	case r.drainErr != nil:
		failf("drain: %s exited with %v; want a clean exit", r.drain.name, r.drainErr)
	}

	stopChurn()
	<-churnDone
	if !waitFor(ctx, sc.Recover, func() bool { return rec.rejoinsPending() == 0 }) {
		failf("%d rejoining players not back within %v", rec.rejoinsPending(), sc.Recover)
	}
	settled := time.Now()
	sleep(ctx, sc.Settle)
	r.playing = rec.playing(settled.Add(sc.Settle / 2))
	tl.log("end: %d of %d players playing; %s", r.playing, len(players), census())
	stopPlay()
	wg.Wait()
	r.elapsed = time.Since(start)
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	r.tally(rec, f, sc.Cache)
	return r, nil
}

// tally reads the counts and checks the outcome.
func (r *report) tally(rec *recorder, f *fleet, cache time.Duration) {
	failf := func(format string, args ...any) { r.failures = append(r.failures, fmt.Sprintf(format, args...)) }
	r.killOutcome, r.drainOutcome = rec.outcome(r.kill, cache), rec.outcome(r.drain, cache)
	rec.mu.Lock()
	r.connects, r.fallbacks, r.issued, r.failed, r.wrongID = rec.connects, rec.fallbacks, rec.issued, rec.failed, rec.wrongID
	r.rejoins = rec.rejoins
	r.refused = rec.refused
	for i := range rec.players {
		r.sent += rec.players[i].sent
		r.echoed += rec.players[i].received
	}
	rec.mu.Unlock()
	if f.issued != nil {
		var err error
		if r.svcIssued, r.svcRefused, err = f.issued(); err != nil {
			failf("the token service's counts: %v", err)
			r.svcIssued, r.svcRefused = -1, -1
		}
	}

	if n := r.players - r.playing; n > 0 {
		failf("%d players never came back (not playing at the end)", n)
	}
	for _, ev := range []struct {
		e *event
		o outcome
	}{{r.kill, r.killOutcome}, {r.drain, r.drainOutcome}} {
		if len(ev.e.affected) == 0 {
			failf("%s: %s had no players", ev.e.kind, ev.e.name)
		}
		if ev.o.missing > 0 {
			failf("%s: %d players of %s never reconnected elsewhere", ev.e.kind, ev.o.missing, ev.e.name)
		}
		if ev.o.stale > 0 {
			failf("%s: %d tokens issued more than the directory's cache time after it still listed %s (the directory kept offering it)", ev.e.kind, ev.o.stale, ev.e.name)
		}
	}
	if n := r.drainOutcome.timedOut + r.drainOutcome.otherEnd; n > 0 {
		failf("drain: %d players of %s were not disconnected cleanly (%d timed out)", n, r.drain.name, r.drainOutcome.timedOut)
	}
	if r.issued < r.connects {
		failf("%d tokens issued for %d connects; every connect needs a fresh token", r.issued, r.connects)
	}
	if r.wrongID > 0 {
		failf("%d tokens named another client id than the caller's identity", r.wrongID)
	}
	if r.svcIssued >= 0 && r.svcIssued != r.issued {
		failf("the token service issued %d tokens; the players got %d", r.svcIssued, r.issued)
	}
}

// pickBusiest returns the event for the server with the most players
// (the first of a tie), with the players talking to it now.
func pickBusiest(kind string, servers []server, rec *recorder) *event {
	var best *event
	for _, s := range servers {
		on := rec.on(s.Addr())
		if best == nil || len(on) > len(best.affected) {
			best = &event{kind: kind, name: s.Name(), server: s.Addr(), affected: on}
		}
	}
	best.at = time.Now()
	return best
}

func serverOf(servers []server, ev *event) server {
	for _, s := range servers {
		if s.Addr() == ev.server {
			return s
		}
	}
	panic("scripts/fleet: event for an unknown server") // pickBusiest chose from servers
}

// churn asks players to rejoin at a steady rate, only players of servers
// still admitting. An event holds it until no rejoin is in flight, so that
// the event's players are all in session when it strikes.
type churn struct {
	mu      sync.Mutex
	servers []netip.AddrPort // whose players may be asked
}

func (c *churn) run(ctx context.Context, rate float64, rec *recorder, players []*player) {
	if rate == 0 {
		return
	}
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		i := rec.pickRejoin(c.servers)
		c.mu.Unlock()
		if i >= 0 {
			select {
			case players[i].rejoin <- struct{}{}:
			default: // cannot happen: a player is asked once until it connects again
			}
		}
	}
}

// hold stops new rejoins and waits, within bound, until those asked for
// have connected again; release resumes them without lost's players.
func (c *churn) hold(ctx context.Context, rec *recorder, bound time.Duration) {
	c.mu.Lock()
	waitFor(ctx, bound, func() bool { return rec.rejoinsPending() == 0 })
}

func (c *churn) release(lost netip.AddrPort) {
	c.servers = slices.DeleteFunc(slices.Clone(c.servers), func(a netip.AddrPort) bool { return a == lost })
	c.mu.Unlock()
}

// waitFor polls cond every 50 ms until it holds (true), d has passed or
// ctx is done (false).
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

func exitText(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}
