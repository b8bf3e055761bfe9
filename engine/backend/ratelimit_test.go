package backend

import (
	"strings"
	"testing"
	"time"
)

func TestLimiterBucket(t *testing.T) {
	l := newLimiter(RateLimit{PerSecond: 2, Burst: 2, MaxIdentities: 10})
	now := testStart
	step := func(d time.Duration, want bool, wantWait time.Duration) {
		t.Helper()
		now = now.Add(d)
		ok, wait := l.allow(7, now)
		if ok != want || wait != wantWait {
			t.Fatalf("at +%v: allow %v wait %v; want %v %v", now.Sub(testStart), ok, wait, want, wantWait)
		}
	}
	step(0, true, 0)
	step(0, true, 0)
	step(0, false, 500*time.Millisecond)
	step(250*time.Millisecond, false, 250*time.Millisecond) // half a token back
	step(250*time.Millisecond, true, 0)
	step(time.Hour, true, 0) // refills to the burst, no further
	step(0, true, 0)
	step(0, false, 500*time.Millisecond)
	step(-time.Minute, false, 500*time.Millisecond) // a clock going back refills nothing
}

// The table never holds more than MaxIdentities; the least recently seen
// identity goes first.
func TestLimiterBounded(t *testing.T) {
	l := newLimiter(RateLimit{PerSecond: 1e-6, Burst: 1, MaxIdentities: 3})
	for id := range uint64(3) {
		if ok, _ := l.allow(id, testStart); !ok {
			t.Fatalf("client %d refused at first sight", id)
		}
	}
	l.allow(0, testStart) // 0 is now the most recent; 1 the least
	if ok, _ := l.allow(3, testStart); !ok || l.len() != 3 {
		t.Fatalf("a fourth client: ok %v, %d in the table; want ok with 3", ok, l.len())
	}
	if ok, _ := l.allow(1, testStart); !ok {
		t.Error("client 1 (least recent, evicted) refused; want a fresh bucket")
	}
	// 1 came back and evicted 2 (now least recent); 0 and 3 keep their empty buckets.
	for _, id := range []uint64{0, 3} {
		if ok, _ := l.allow(id, testStart); ok {
			t.Errorf("client %d got a token from an empty bucket", id)
		}
	}
	if l.len() != 3 {
		t.Errorf("%d in the table; want 3", l.len())
	}
}

func TestRateLimitDefaults(t *testing.T) {
	r, err := RateLimit{}.withDefaults()
	if err != nil || r.PerSecond != DefaultRatePerSecond || r.Burst != DefaultRateBurst || r.MaxIdentities != DefaultMaxIdentities {
		t.Fatalf("defaults %+v, %v", r, err)
	}
	for _, bad := range []RateLimit{{PerSecond: 2e6}, {Burst: 1<<20 + 1}, {MaxIdentities: -1}} {
		if _, err := bad.withDefaults(); err == nil || !strings.Contains(err.Error(), "allowed") {
			t.Errorf("%+v: error %v; want one naming what is allowed", bad, err)
		}
	}
}
