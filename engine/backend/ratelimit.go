package backend

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// Rate limit defaults (for zero RateLimit fields) and bounds.
const (
	// DefaultRatePerSecond is the sustained tokens per second per client:
	// one every 10 s, 3 per 30-second token lifetime. With a burst of 4
	// and a server's cap of engine.PendingTokensPerClientID pending
	// entries per client id, an account holds at most 4 entries of a
	// server's history at any time and 3 in the long run (finished
	// handshakes or not), so filling the smallest history
	// (engine.MinTokenHistorySize), which locks every new player out,
	// takes hundreds of accounts (the README's figures). A player needs
	// one token per connection attempt.
	DefaultRatePerSecond = 0.1
	// DefaultRateBurst is how many tokens a client may get at once.
	DefaultRateBurst = 4
	// DefaultMaxIdentities bounds the table of per-client buckets.
	DefaultMaxIdentities = 1 << 16

	maxRatePerSecond = 1e6
	maxRateBurst     = 1 << 20
	maxIdentities    = 1 << 24
)

// RateLimit bounds how often one identity (client id) gets a token: a
// token bucket of Burst tokens refilled at PerSecond. Zero fields take the
// defaults.
type RateLimit struct {
	// PerSecond is the sustained rate per client id (default 0.1; allowed
	// more than 0 up to 1e6).
	PerSecond float64
	// Burst is how many requests a client id may make at once (default 4;
	// allowed 1 to 2^20).
	Burst int
	// MaxIdentities bounds the table of buckets (default 65536; allowed 1
	// to 2^24). When it is full the least recently seen identity's bucket
	// is dropped; that identity starts again with a full bucket, which is
	// what it would have had after being idle for Burst/PerSecond seconds.
	MaxIdentities int
}

func (r RateLimit) withDefaults() (RateLimit, error) {
	if !orDefault(&r.PerSecond, DefaultRatePerSecond, math.SmallestNonzeroFloat64, maxRatePerSecond) {
		return r, fmt.Errorf("RateLimit.PerSecond %g; allowed more than 0 up to %g (0 means %g)", r.PerSecond, float64(maxRatePerSecond), DefaultRatePerSecond)
	}
	if !orDefault(&r.Burst, DefaultRateBurst, 1, maxRateBurst) {
		return r, fmt.Errorf("RateLimit.Burst %d; allowed 1 to %d (0 means %d)", r.Burst, maxRateBurst, DefaultRateBurst)
	}
	if !orDefault(&r.MaxIdentities, DefaultMaxIdentities, 1, maxIdentities) {
		return r, fmt.Errorf("RateLimit.MaxIdentities %d; allowed 1 to %d (0 means %d)", r.MaxIdentities, maxIdentities, DefaultMaxIdentities)
	}
	return r, nil
}

// limiter is a bounded table of token buckets, least recently used first
// out. One mutex: a request takes it once, for a map lookup and a few
// float operations.
type limiter struct {
	cfg RateLimit

	mu      sync.Mutex
	buckets *lru[uint64, tokenBucket]
}

func newLimiter(cfg RateLimit) *limiter {
	return &limiter{cfg: cfg, buckets: newLRU[uint64, tokenBucket](cfg.MaxIdentities)}
}

// allow takes a token from id's bucket. When there is none it returns
// false and how long until there is.
func (l *limiter) allow(id uint64, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, seen := l.buckets.use(id)
	if seen {
		b.refill(now, l.cfg.PerSecond, l.cfg.Burst)
	} else {
		b.fill(now, l.cfg.Burst)
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, b.wait(l.cfg.PerSecond)
}

// len returns the number of identities in the table.
func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buckets.len()
}
