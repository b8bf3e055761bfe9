package agones

import (
	"context"
	"log/slog"
	"strconv"
)

// tracker keeps the sidecar's view of the players in step with the
// server's. sync makes at most budget sidecar calls per round, stops early
// when the Lifecycle is quitting, and is called from one goroutine only.
type tracker interface {
	sync(ctx context.Context, players []uint64, capacity, budget int)
}

func newTracker(l *Lifecycle, cfg LifecycleConfig) tracker {
	switch cfg.Tracking {
	case TrackCounter:
		return &counterTracker{l: l, name: cfg.TrackingName, count: -1, capacity: -1}
	case TrackList:
		return &setTracker{l: l, op: "List " + cfg.TrackingName, store: listStore{l.sdk, cfg.TrackingName}, maxCap: MaxListCapacity}
	case TrackPlayers:
		return &setTracker{l: l, op: "Players", store: playerStore{l.sdk}, maxCap: 1<<63 - 1}
	}
	return nil
}

// counterTracker sets a Counter's count and capacity, both in one
// request; setting (not adding) makes a repeat harmless.
type counterTracker struct {
	l               *Lifecycle
	name            string
	count, capacity int64 // as last pushed; -1 when unknown
}

func (t *counterTracker) sync(ctx context.Context, players []uint64, capacity, _ int) {
	c, n := int64(capacity), min(int64(len(players)), int64(capacity))
	if n == t.count && c == t.capacity {
		return
	}
	_, err := t.l.sdk.UpdateCounter(ctx, t.name, CounterUpdate{Count: &n, Capacity: &c})
	if t.l.callErr(ctx, "UpdateCounter", err) != nil {
		t.count, t.capacity = -1, -1
		return
	}
	t.count, t.capacity = n, c
	t.l.playerChanges.Add(1)
}

// setStore is a set of ids with a capacity on the sidecar: a List, or the
// alpha player tracking.
type setStore interface {
	fetch(ctx context.Context) (ids []string, capacity int64, err error)
	add(ctx context.Context, id string) error
	remove(ctx context.Context, id string) error
	setCapacity(ctx context.Context, c int64) error
}

// setTracker diffs the server's players against what the sidecar holds,
// as last fetched and changed since. It fetches again after any failure,
// since a failed call may or may not have been applied.
type setTracker struct {
	l       *Lifecycle
	op      string
	store   setStore
	maxCap  int64
	synced  bool
	held    map[uint64]struct{} // ids the sidecar holds
	cap     int64               // capacity the sidecar holds
	want    map[uint64]struct{} // scratch: the server's players
	warnCap bool                // capacity clamp logged
	warnFul bool                // capacity-full logged
}

func (t *setTracker) fail(ctx context.Context, what string, err error) bool {
	if t.l.callErr(ctx, t.op+" "+what, err) != nil {
		t.synced = false
		return true
	}
	return false
}

func (t *setTracker) sync(ctx context.Context, players []uint64, capacity, budget int) {
	if !t.synced {
		ids, c, err := t.store.fetch(ctx)
		if t.fail(ctx, "fetch", err) {
			return
		}
		t.held = make(map[uint64]struct{}, len(ids))
		foreign := 0
		for _, s := range ids {
			if id, err := strconv.ParseUint(s, 10, 64); err == nil && strconv.FormatUint(id, 10) == s {
				t.held[id] = struct{}{}
			} else {
				foreign++
			}
		}
		if foreign > 0 {
			t.l.log.Warn("agones: ids not written by this server found; left alone", slog.String("store", t.op), slog.Int("count", foreign))
		}
		t.cap, t.synced = c, true
	}
	if t.want == nil {
		t.want = make(map[uint64]struct{}, len(players))
	}
	clear(t.want)
	for _, id := range players {
		t.want[id] = struct{}{}
	}
	want := int64(capacity)
	if want > t.maxCap {
		want = t.maxCap
		if !t.warnCap {
			t.warnCap = true
			t.l.log.Warn("agones: capacity above what Agones allows; clamped", slog.String("store", t.op), slog.Int("capacity", capacity), slog.Int64("max", t.maxCap))
		}
	}
	// Removals first: they make room for the additions.
	for id := range t.held {
		if budget == 0 || t.l.quitting() {
			return
		}
		if _, ok := t.want[id]; ok {
			continue
		}
		budget--
		if t.fail(ctx, "remove", t.store.remove(ctx, strconv.FormatUint(id, 10))) {
			return
		}
		delete(t.held, id)
		t.l.playerChanges.Add(1)
	}
	if t.cap != want && budget > 0 && !t.l.quitting() {
		budget--
		if t.fail(ctx, "capacity", t.store.setCapacity(ctx, want)) {
			return
		}
		t.cap = want
		t.l.playerChanges.Add(1)
	}
	for _, id := range players {
		if budget == 0 || t.l.quitting() {
			return
		}
		if _, ok := t.held[id]; ok {
			continue
		}
		if int64(len(t.held)) >= t.cap {
			if !t.warnFul {
				t.warnFul = true
				t.l.log.Warn("agones: more players than capacity; not all reported", slog.String("store", t.op), slog.Int64("capacity", t.cap))
			}
			return
		}
		budget--
		if t.fail(ctx, "add", t.store.add(ctx, strconv.FormatUint(id, 10))) {
			return
		}
		t.held[id] = struct{}{}
		t.l.playerChanges.Add(1)
	}
}

type listStore struct {
	sdk  *SDK
	name string
}

func (s listStore) fetch(ctx context.Context) ([]string, int64, error) {
	l, err := s.sdk.GetList(ctx, s.name)
	return l.Values, l.Capacity, err
}

func (s listStore) add(ctx context.Context, id string) error {
	_, err := s.sdk.AddListValue(ctx, s.name, id)
	return err
}

func (s listStore) remove(ctx context.Context, id string) error {
	_, err := s.sdk.RemoveListValue(ctx, s.name, id)
	return err
}

func (s listStore) setCapacity(ctx context.Context, c int64) error {
	_, err := s.sdk.SetListCapacity(ctx, s.name, c)
	return err
}

// playerStore is the alpha player tracking. PlayerConnect answering false
// (already connected) and PlayerDisconnect answering false (not connected)
// both leave the sidecar as wanted, so only errors count.
type playerStore struct{ sdk *SDK }

func (s playerStore) fetch(ctx context.Context) ([]string, int64, error) {
	ids, err := s.sdk.GetConnectedPlayers(ctx)
	if err != nil {
		return nil, 0, err
	}
	c, err := s.sdk.GetPlayerCapacity(ctx)
	return ids, c, err
}

func (s playerStore) add(ctx context.Context, id string) error {
	_, err := s.sdk.PlayerConnect(ctx, id)
	return err
}

func (s playerStore) remove(ctx context.Context, id string) error {
	_, err := s.sdk.PlayerDisconnect(ctx, id)
	return err
}

func (s playerStore) setCapacity(ctx context.Context, c int64) error {
	return s.sdk.SetPlayerCapacity(ctx, c)
}
