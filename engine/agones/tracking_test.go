package agones

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/netcode-go/netcode/engine/agones/agonestest"
)

// newTrackerFor returns the tracker of a Lifecycle (never started) in mode.
func newTrackerFor(t *testing.T, sc *agonestest.Sidecar, mode Tracking) tracker {
	t.Helper()
	l, err := NewLifecycle(newSDK(t, sc, Config{}), newFakeServer(1), LifecycleConfig{Tracking: mode})
	if err != nil {
		t.Fatal(err)
	}
	return l.tracker
}

// calls returns the requests since mark as "METHOD /path body".
func callsSince(sc *agonestest.Sidecar, mark int) []string {
	var out []string
	for _, c := range sc.Calls()[mark:] {
		out = append(out, strings.TrimSpace(c.Method+" "+c.Path+" "+c.Body))
	}
	return out
}

func TestCounterTracker(t *testing.T) {
	sc := agonestest.Start(t, agonestest.Config{Counters: map[string]agonestest.Counter{"players": {Count: 7, Capacity: 100}}})
	tr := newTrackerFor(t, sc, TrackCounter)
	ctx := context.Background()
	for _, step := range []struct {
		name     string
		players  []uint64
		capacity int
		fail     bool
		want     []string
		count    int64
		cap      int64
	}{
		{"first sync sets both", []uint64{1, 2}, 4, false, []string{`PATCH /v1beta1/counters/players {"count":"2","capacity":"4"}`}, 2, 4},
		{"unchanged sends nothing", []uint64{2, 1}, 4, false, nil, 2, 4},
		{"a connect", []uint64{1, 2, 3}, 4, false, []string{`PATCH /v1beta1/counters/players {"count":"3","capacity":"4"}`}, 3, 4},
		{"count clamped to capacity", []uint64{1, 2, 3, 4, 5}, 4, false, []string{`PATCH /v1beta1/counters/players {"count":"4","capacity":"4"}`}, 4, 4},
		{"failure", []uint64{1}, 4, true, []string{`PATCH /v1beta1/counters/players {"count":"1","capacity":"4"}`}, 4, 4},
		{"resent after a failure", []uint64{1}, 4, false, []string{`PATCH /v1beta1/counters/players {"count":"1","capacity":"4"}`}, 1, 4},
		{"capacity change", nil, 2, false, []string{`PATCH /v1beta1/counters/players {"count":"0","capacity":"2"}`}, 0, 2},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.fail {
				sc.Fail(500)
				defer sc.Fail(0)
			}
			mark := len(sc.Calls())
			tr.sync(ctx, step.players, step.capacity, 64)
			if got := callsSince(sc, mark); !slices.Equal(got, step.want) {
				t.Errorf("sent %q; want %q", got, step.want)
			}
			if c, _ := sc.Counter("players"); c.Count != step.count || c.Capacity != step.cap {
				t.Errorf("counter %+v; want %d/%d", c, step.count, step.cap)
			}
		})
	}
	sc.CheckClean(t)
}

// setState reads the sidecar's ids and capacity for a List or the alpha
// player tracking.
func setState(sc *agonestest.Sidecar, mode Tracking) ([]string, int64) {
	if mode == TrackList {
		l, _ := sc.List("players")
		return slices.Sorted(slices.Values(l.Values)), l.Capacity
	}
	return slices.Sorted(slices.Values(sc.Players())), sc.PlayerCapacity()
}

func TestSetTracker(t *testing.T) {
	for _, mode := range []Tracking{TrackList, TrackPlayers} {
		t.Run(mode.String(), func(t *testing.T) {
			sc := agonestest.Start(t, agonestest.Config{Lists: map[string]agonestest.List{"players": {}}})
			tr := newTrackerFor(t, sc, mode)
			ctx := context.Background()
			for _, step := range []struct {
				name     string
				players  []uint64
				capacity int
				budget   int
				fail     bool
				ids      []string
				cap      int64
				calls    int
			}{
				{"fetch, capacity, one add", []uint64{3, 1, 2}, 8, 2, false, []string{"3"}, 8, 2},
				{"budget bounds the round", []uint64{3, 1, 2}, 8, 1, false, []string{"1", "3"}, 8, 1},
				{"rest of the adds", []uint64{3, 1, 2}, 8, 5, false, []string{"1", "2", "3"}, 8, 1},
				{"in sync sends nothing", []uint64{1, 2, 3}, 8, 5, false, []string{"1", "2", "3"}, 8, 0},
				{"disconnect and connect", []uint64{1, 3, 4}, 8, 5, false, []string{"1", "3", "4"}, 8, 2},
				{"in sync after changes", []uint64{1, 3, 4}, 8, 5, false, []string{"1", "3", "4"}, 8, 0},
				{"failed round", []uint64{1, 3, 4, 5}, 8, 5, true, []string{"1", "3", "4"}, 8, 1},
				{"refetch after a failure", []uint64{1, 3, 4, 5}, 8, 5, false, []string{"1", "3", "4", "5"}, 8, 1},
				{"over capacity stops adding", []uint64{1, 3, 4, 5, 6, 7}, 4, 9, false, []string{"1", "3", "4", "5"}, 4, 1},
				{"capacity grows", []uint64{1, 3, 4, 5, 6, 7}, 6, 9, false, []string{"1", "3", "4", "5", "6", "7"}, 6, 3},
				{"all leave", nil, 6, 9, false, nil, 6, 6},
				{"empty and in sync", nil, 6, 9, false, nil, 6, 0},
			} {
				t.Run(step.name, func(t *testing.T) {
					if step.fail {
						sc.Fail(500)
						defer sc.Fail(0)
					}
					mark := len(sc.Calls())
					tr.sync(ctx, step.players, step.capacity, step.budget)
					calls := callsSince(sc, mark)
					// A fetch is one call for a List, two for players.
					fetches := 0
					for _, c := range calls {
						if strings.HasPrefix(c, "GET ") {
							fetches++
						}
					}
					if n := len(calls) - fetches; n != step.calls {
						t.Errorf("%d changes sent; want %d: %q", n, step.calls, calls)
					}
					if step.name == "refetch after a failure" && fetches == 0 {
						t.Errorf("no fetch after a failed round: %q", calls)
					}
					if step.fail {
						return
					}
					ids, c := setState(sc, mode)
					if !slices.Equal(ids, step.ids) || c != step.cap {
						t.Errorf("sidecar holds %q cap %d; want %q cap %d", ids, c, step.ids, step.cap)
					}
				})
			}
			sc.CheckClean(t)
		})
	}
}

// TestSetTrackerResync: what the sidecar already holds (from an earlier
// run of the server) is fetched first; stale ids go, and values this
// server did not write are left alone.
func TestSetTrackerResync(t *testing.T) {
	sc := agonestest.Start(t, agonestest.Config{Lists: map[string]agonestest.List{"players": {Capacity: 10, Values: []string{"7", "8", "bob", "007"}}}})
	tr := newTrackerFor(t, sc, TrackList)
	mark := len(sc.Calls())
	tr.sync(context.Background(), []uint64{8, 9}, 10, 64)
	want := []string{
		"GET /v1beta1/lists/players",
		`POST /v1beta1/lists/players:removeValue {"value":"7"}`,
		`POST /v1beta1/lists/players:addValue {"value":"9"}`,
	}
	if got := callsSince(sc, mark); !slices.Equal(got, want) {
		t.Errorf("sent %q; want %q", got, want)
	}
	if l, _ := sc.List("players"); !slices.Equal(l.Values, []string{"8", "bob", "007", "9"}) {
		t.Errorf("list %q", l.Values)
	}
	sc.CheckClean(t)
}

// TestListCapacityClamped: a List cannot hold more than 1000.
func TestListCapacityClamped(t *testing.T) {
	sc := agonestest.Start(t, agonestest.Config{Lists: map[string]agonestest.List{"players": {}}})
	tr := newTrackerFor(t, sc, TrackList)
	tr.sync(context.Background(), []uint64{1}, 5000, 64)
	if l, _ := sc.List("players"); l.Capacity != MaxListCapacity || len(l.Values) != 1 {
		t.Errorf("list %+v; want capacity %d and the player", l, MaxListCapacity)
	}
	sc.CheckClean(t)
}
