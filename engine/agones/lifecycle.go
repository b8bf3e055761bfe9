package agones

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Server is what a Lifecycle needs from a game server. Its methods are
// called from the Lifecycle's goroutines and must be safe for concurrent
// use and quick.
type Server interface {
	// Live reports whether every shard is making progress.
	Live() bool
	// Players appends the ids of the connected clients to dst.
	Players(dst []uint64) []uint64
	// Capacity is the number of client slots.
	Capacity() int
}

// Tracking selects how a Lifecycle reports players to Agones.
type Tracking uint8

// Player tracking modes.
const (
	// TrackNone reports no players.
	TrackNone Tracking = iota
	// TrackCounter keeps a Counter's count at the number of players and
	// its capacity at Server.Capacity.
	TrackCounter
	// TrackList keeps a List's values at the players' ids in decimal and
	// its capacity at Server.Capacity (at most MaxListCapacity).
	TrackList
	// TrackPlayers uses the alpha player tracking: PlayerConnect and
	// PlayerDisconnect with decimal ids, and SetPlayerCapacity.
	TrackPlayers
)

// String names the mode.
func (t Tracking) String() string {
	switch t {
	case TrackNone:
		return "none"
	case TrackCounter:
		return "counter"
	case TrackList:
		return "list"
	case TrackPlayers:
		return "players"
	}
	return fmt.Sprintf("Tracking(%d)", uint8(t))
}

// LifecycleConfig configures a Lifecycle.
type LifecycleConfig struct {
	// HealthInterval is the period of Health pings while the server is
	// live (0 means 2s). It must be below the GameServer's
	// spec.health.periodSeconds (5s unless configured).
	HealthInterval time.Duration
	// SyncInterval is the period of player syncs (0 means 1s; the sidecar
	// batches updates to the GameServer every second anyway).
	SyncInterval time.Duration
	// Tracking selects how players are reported.
	Tracking Tracking
	// TrackingName names the Counter or List (empty means "players").
	TrackingName string
	// MaxChangesPerSync bounds the sidecar calls of one sync round
	// (0 means 64); the rest waits for the next round.
	MaxChangesPerSync int
	// Labels and Annotations are set once after Ready (see CheckLabel and
	// CheckAnnotation), retried each sync round until they succeed.
	Labels, Annotations map[string]string
	// Logger receives failures and recoveries (nil means none).
	Logger *slog.Logger
}

// Lifecycle defaults and bounds.
const (
	DefaultHealthInterval    = 2 * time.Second
	DefaultSyncInterval      = time.Second
	DefaultTrackingName      = "players"
	DefaultMaxChangesPerSync = 64
	maxInterval              = time.Minute
	maxChangesPerSync        = 10000
)

func (c *LifecycleConfig) check() error {
	if c.HealthInterval == 0 {
		c.HealthInterval = DefaultHealthInterval
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = DefaultSyncInterval
	}
	if c.TrackingName == "" {
		c.TrackingName = DefaultTrackingName
	}
	if c.MaxChangesPerSync == 0 {
		c.MaxChangesPerSync = DefaultMaxChangesPerSync
	}
	switch {
	case c.HealthInterval < time.Millisecond || c.HealthInterval > maxInterval:
		return fmt.Errorf("agones: LifecycleConfig.HealthInterval %v; allowed 1ms to %v (0 means %v)", c.HealthInterval, maxInterval, DefaultHealthInterval)
	case c.SyncInterval < time.Millisecond || c.SyncInterval > maxInterval:
		return fmt.Errorf("agones: LifecycleConfig.SyncInterval %v; allowed 1ms to %v (0 means %v)", c.SyncInterval, maxInterval, DefaultSyncInterval)
	case c.Tracking > TrackPlayers:
		return fmt.Errorf("agones: LifecycleConfig.Tracking %v; want TrackNone, TrackCounter, TrackList or TrackPlayers", c.Tracking)
	case c.MaxChangesPerSync < 1 || c.MaxChangesPerSync > maxChangesPerSync:
		return fmt.Errorf("agones: LifecycleConfig.MaxChangesPerSync %d; allowed 1 to %d (0 means %d)", c.MaxChangesPerSync, maxChangesPerSync, DefaultMaxChangesPerSync)
	}
	if err := checkName("tracking", c.TrackingName); err != nil {
		return fmt.Errorf("LifecycleConfig.TrackingName: %w", err)
	}
	return checkMetadata(c.Labels, c.Annotations)
}

// Lifecycle runs a game server's side of the Agones lifecycle: it waits for
// the sidecar and marks the GameServer Ready, pings Health while the server
// is live, keeps the player count and capacity in sync, and asks for
// Shutdown at the end of a drain. Sidecar failures are logged and counted,
// never returned to the server's goroutines; no method blocks past its
// context (Close cancels all calls in flight).
type Lifecycle struct {
	sdk     *SDK // one attempt per call: the loops are the retries
	retry   Backoff
	srv     Server
	cfg     LifecycleConfig
	log     *slog.Logger
	tracker tracker

	closing context.Context // done once Close is called
	close   context.CancelFunc

	mu       sync.Mutex
	started  bool
	ended    bool               // Shutdown was called
	stop     context.CancelFunc // cuts the calls in flight short
	quit     chan struct{}      // closed to stop the loops between calls
	quitOnce sync.Once
	done     chan struct{} // closed when the goroutines have returned

	ready     chan struct{}
	readyOnce sync.Once

	wasLive     atomic.Bool
	metaPending []metaEntry // labels and annotations to set; sync goroutine only

	calls, failures           atomic.Uint64
	health, healthSkipped     atomic.Uint64
	syncRounds, playerChanges atomic.Uint64
	isReady, shutdownDone     atomic.Bool

	errMu     sync.Mutex
	lastErr   string
	lastErrAt time.Time
	streak    map[string]int // consecutive failures per operation
}

type metaEntry struct {
	label      bool
	key, value string
}

// LifecycleStats counts a Lifecycle's work.
type LifecycleStats struct {
	Ready         bool   // Ready succeeded
	Shutdown      bool   // Shutdown succeeded
	Calls         uint64 // sidecar operations (a player fetch may be two calls)
	Failures      uint64 // sidecar calls that failed
	HealthSent    uint64 // Health pings that succeeded
	HealthSkipped uint64 // Health periods skipped because the server was not live
	SyncRounds    uint64 // player sync rounds run
	// PlayerChanges counts player and capacity updates the sidecar
	// accepted.
	PlayerChanges uint64
	// LastError is the newest failure and LastErrorAt its time.
	LastError   string
	LastErrorAt time.Time
}

// NewLifecycle returns a Lifecycle for srv that talks through sdk. It does
// nothing until Start.
func NewLifecycle(sdk *SDK, srv Server, cfg LifecycleConfig) (*Lifecycle, error) {
	if sdk == nil || srv == nil {
		return nil, errors.New("agones: NewLifecycle needs an SDK and a Server")
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	l := &Lifecycle{
		sdk:    sdk.withAttempts(1),
		retry:  sdk.retry,
		srv:    srv,
		cfg:    cfg,
		log:    cfg.Logger,
		ready:  make(chan struct{}),
		streak: make(map[string]int),
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	l.closing, l.close = context.WithCancel(context.Background())
	l.tracker = newTracker(l, cfg)
	for k, v := range cfg.Labels {
		l.metaPending = append(l.metaPending, metaEntry{true, k, v})
	}
	for k, v := range cfg.Annotations {
		l.metaPending = append(l.metaPending, metaEntry{false, k, v})
	}
	return l, nil
}

// Start launches the Lifecycle's goroutines; call it once the server is
// listening. They retry Ready with backoff until the sidecar accepts it
// (and the server is live), then ping Health and sync players until ctx is
// done, Shutdown or Close. Start returns at once.
func (l *Lifecycle) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closing.Err() != nil:
		return errors.New("agones: Lifecycle.Start after Close")
	case l.ended:
		return errors.New("agones: Lifecycle.Start after Shutdown")
	case l.started:
		return errors.New("agones: Lifecycle.Start called twice")
	}
	l.started = true
	run, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(l.closing, cancel)
	l.stop = cancel
	l.quit = make(chan struct{})
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		defer unhook()
		defer cancel()
		l.run(run)
	}()
	return nil
}

// Ready is closed once the sidecar has accepted Ready.
func (l *Lifecycle) Ready() <-chan struct{} { return l.ready }

// Shutdown ends the lifecycle at the end of a drain: it stops the Health
// pings and player syncs, letting a call in flight finish so that Shutdown
// is the last call the sidecar sees, then calls Shutdown on the sidecar,
// retrying with backoff until it succeeds or ctx is done (or Close is
// called).
func (l *Lifecycle) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(l.closing, cancel)()
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
	if err := l.halt(ctx, false); err != nil {
		return fmt.Errorf("agones: Lifecycle.Shutdown: stopping the loops: %w", err)
	}
	var last error // the newest failure not caused by ctx ending
	for n := 1; ; n++ {
		err := l.callErr(ctx, "Shutdown", l.sdk.Shutdown(ctx))
		if err == nil {
			l.shutdownDone.Store(true)
			l.log.Info("agones: Shutdown accepted")
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		if ctx.Err() != nil || !sleep(ctx, l.retry.delay(n), nil) {
			return fmt.Errorf("agones: Lifecycle.Shutdown: %w (last error: %v)", context.Cause(ctx), last)
		}
	}
}

// Close stops the Lifecycle's goroutines and any Shutdown in progress and
// waits for them; it does not call the sidecar. Calls after the first
// return nil at once.
func (l *Lifecycle) Close() error {
	l.close()
	return l.halt(context.Background(), true)
}

// halt stops the goroutines, if started, and waits for them or ctx. The
// loops stop between calls; a call in flight is cut short at once if hard,
// else when ctx ends.
func (l *Lifecycle) halt(ctx context.Context, hard bool) error {
	l.mu.Lock()
	stop, quit, done := l.stop, l.quit, l.done
	l.mu.Unlock()
	if stop == nil {
		return nil
	}
	l.quitOnce.Do(func() { close(quit) })
	if hard {
		stop()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		stop() // the goroutines return promptly now; Close waits for them
		return ctx.Err()
	}
}

// quitting reports whether the loops are to stop.
func (l *Lifecycle) quitting() bool {
	select {
	case <-l.quit:
		return true
	default:
		return false
	}
}

// Stats returns the Lifecycle's counters.
func (l *Lifecycle) Stats() LifecycleStats {
	st := LifecycleStats{
		Ready:         l.isReady.Load(),
		Shutdown:      l.shutdownDone.Load(),
		Calls:         l.calls.Load(),
		Failures:      l.failures.Load(),
		HealthSent:    l.health.Load(),
		HealthSkipped: l.healthSkipped.Load(),
		SyncRounds:    l.syncRounds.Load(),
		PlayerChanges: l.playerChanges.Load(),
	}
	l.errMu.Lock()
	st.LastError, st.LastErrorAt = l.lastErr, l.lastErrAt
	l.errMu.Unlock()
	return st
}

// run is the Lifecycle's main goroutine: Ready, then Health, with the
// player sync in a second goroutine so a slow sync never delays a ping.
func (l *Lifecycle) run(ctx context.Context) {
	if !l.waitReady(ctx) {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { l.syncLoop(ctx) })
	l.healthLoop(ctx)
}

// waitReady retries Ready with backoff until the sidecar accepts it or ctx
// is done. While the server is not live it sends nothing and looks again
// every HealthInterval.
func (l *Lifecycle) waitReady(ctx context.Context) bool {
	for n := 1; ; {
		wait := l.cfg.HealthInterval
		if l.srv.Live() {
			if l.callErr(ctx, "Ready", l.sdk.Ready(ctx)) == nil {
				l.isReady.Store(true)
				l.wasLive.Store(true)
				l.readyOnce.Do(func() { close(l.ready) })
				l.log.Info("agones: GameServer marked Ready", slog.Int("attempts", n))
				return true
			}
			wait = l.retry.delay(n)
			n++
		}
		if ctx.Err() != nil || !sleep(ctx, wait, l.quit) {
			return false
		}
	}
}

func (l *Lifecycle) healthLoop(ctx context.Context) {
	for {
		l.healthOnce(ctx)
		if !sleep(ctx, l.cfg.HealthInterval, l.quit) {
			return
		}
	}
}

// healthOnce pings Health if the server is live. Not pinging is how a
// stuck server tells Agones: the GameServer goes Unhealthy and is replaced.
func (l *Lifecycle) healthOnce(ctx context.Context) {
	live := l.srv.Live()
	if was := l.wasLive.Swap(live); was != live {
		if live {
			l.log.Info("agones: server live again; resuming Health pings")
		} else {
			l.log.Warn("agones: server not live; withholding Health pings")
		}
	}
	if !live {
		l.healthSkipped.Add(1)
		return
	}
	if l.callErr(ctx, "Health", l.sdk.Health(ctx)) == nil {
		l.health.Add(1)
	}
}

func (l *Lifecycle) syncLoop(ctx context.Context) {
	var buf []uint64
	for {
		l.syncMetadata(ctx)
		if l.tracker != nil && !l.quitting() {
			buf = l.srv.Players(buf[:0])
			l.tracker.sync(ctx, buf, l.srv.Capacity(), l.cfg.MaxChangesPerSync)
			l.syncRounds.Add(1)
		}
		if !sleep(ctx, l.cfg.SyncInterval, l.quit) {
			return
		}
	}
}

// syncMetadata sets the configured labels and annotations still pending.
func (l *Lifecycle) syncMetadata(ctx context.Context) {
	for len(l.metaPending) > 0 && !l.quitting() {
		m := l.metaPending[0]
		var err error
		if m.label {
			err = l.callErr(ctx, "SetLabel", l.sdk.SetLabel(ctx, m.key, m.value))
		} else {
			err = l.callErr(ctx, "SetAnnotation", l.sdk.SetAnnotation(ctx, m.key, m.value))
		}
		if err != nil {
			return
		}
		l.metaPending = l.metaPending[1:]
	}
}

// callErr counts a sidecar call under op and logs the first failure of a
// streak and the recovery after one, so a dead sidecar does not flood the
// log.
func (l *Lifecycle) callErr(ctx context.Context, op string, err error) error {
	l.calls.Add(1)
	if err != nil && ctx.Err() != nil {
		return err // we cut the call short; not the sidecar's failure
	}
	l.errMu.Lock()
	n := l.streak[op]
	if err == nil {
		delete(l.streak, op)
	} else {
		l.streak[op] = n + 1
		l.lastErr, l.lastErrAt = err.Error(), time.Now()
	}
	l.errMu.Unlock()
	switch {
	case err == nil && n > 0:
		l.log.Info("agones: sidecar call recovered", slog.String("op", op), slog.Int("failures", n))
	case err != nil:
		l.failures.Add(1)
		level := slog.LevelDebug
		if n == 0 {
			level = slog.LevelWarn
		}
		l.log.Log(context.Background(), level, "agones: sidecar call failed", slog.String("op", op), slog.Int("streak", n+1), slog.Any("err", err))
	}
	return err
}
