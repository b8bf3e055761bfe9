package backend

import (
	"fmt"
	"math"
	"net/netip"
	"sync"
	"time"
)

// Refused-authentication limit defaults (for zero AuthFailureLimit fields)
// and bounds.
const (
	// DefaultAuthFailuresPerSecond refills an address's allowance of
	// refused authentications: one every 10 s.
	DefaultAuthFailuresPerSecond = 0.1
	// DefaultAuthFailureBurst is how many refusals an address may have
	// in a row before its requests are answered 429 without
	// authenticating.
	DefaultAuthFailureBurst = 10
	// DefaultAuthLogInterval is how often one address's refusals are
	// logged: one line per interval, counting the rest.
	DefaultAuthLogInterval = 10 * time.Second
	// DefaultMaxAuthAddresses bounds the table of addresses.
	DefaultMaxAuthAddresses = 1 << 16

	maxAuthLogInterval = time.Hour
)

// AuthFailureLimit bounds refused authentications per caller address
// (IPv4 address, or IPv6 /64): a token bucket of Burst refusals refilled
// at PerSecond. An address without refusals left is answered 429
// too_many_failures, without calling Authenticate, until its bucket
// refills; a guessed secret then costs the guesser 10 s each. Behind a
// reverse proxy every caller has the proxy's address, so they share one
// bucket: raise Burst there. Zero fields take the defaults.
type AuthFailureLimit struct {
	// PerSecond refills the bucket (default 0.1; allowed more than 0 up
	// to 1e6).
	PerSecond float64
	// Burst is the refusals an address may have in a row (default 10;
	// allowed 1 to 2^20).
	Burst int
	// LogInterval: the refusals of one address are logged once per
	// interval, with how many went unlogged (default 10 s; allowed 1 ms
	// to 1 h).
	LogInterval time.Duration
	// MaxAddresses bounds the table (default 65536; allowed 1 to 2^24);
	// when it is full the least recently refused address is forgotten.
	MaxAddresses int
}

func (c AuthFailureLimit) withDefaults() (AuthFailureLimit, error) {
	if !orDefault(&c.PerSecond, DefaultAuthFailuresPerSecond, math.SmallestNonzeroFloat64, maxRatePerSecond) {
		return c, fmt.Errorf("AuthFailureLimit.PerSecond %g; allowed more than 0 up to %g (0 means %g)", c.PerSecond, float64(maxRatePerSecond), DefaultAuthFailuresPerSecond)
	}
	if !orDefault(&c.Burst, DefaultAuthFailureBurst, 1, maxRateBurst) {
		return c, fmt.Errorf("AuthFailureLimit.Burst %d; allowed 1 to %d (0 means %d)", c.Burst, maxRateBurst, DefaultAuthFailureBurst)
	}
	if !orDefault(&c.LogInterval, DefaultAuthLogInterval, time.Millisecond, maxAuthLogInterval) {
		return c, fmt.Errorf("AuthFailureLimit.LogInterval %v; allowed 1ms to %v (0 means %v)", c.LogInterval, maxAuthLogInterval, DefaultAuthLogInterval)
	}
	if !orDefault(&c.MaxAddresses, DefaultMaxAuthAddresses, 1, maxIdentities) {
		return c, fmt.Errorf("AuthFailureLimit.MaxAddresses %d; allowed 1 to %d (0 means %d)", c.MaxAddresses, maxIdentities, DefaultMaxAuthAddresses)
	}
	return c, nil
}

// failures is the table of addresses with recent refusals: a token
// bucket and a log budget each, least recently refused first out.
type failures struct {
	cfg AuthFailureLimit

	mu    sync.Mutex
	addrs *lru[netip.Prefix, failure]
}

type failure struct {
	tokenBucket
	logged   time.Time // of the last line logged
	unlogged int       // refusals since then
}

func newFailures(cfg AuthFailureLimit) *failures {
	return &failures{cfg: cfg, addrs: newLRU[netip.Prefix, failure](cfg.MaxAddresses)}
}

// failureKey is the unit of the limit: an IPv4 address or an IPv6 /64
// (one host's share of most IPv6 networks). A RemoteAddr that does not
// parse shares one key.
func failureKey(remote string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Prefix{}
	}
	a := ap.Addr().Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// blocked reports whether key has no refusals left, and how long until it
// has one.
func (f *failures) blocked(key netip.Prefix, now time.Time) (bool, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.addrs.peek(key)
	if !ok {
		return false, 0
	}
	b.refill(now, f.cfg.PerSecond, f.cfg.Burst)
	if b.tokens >= 1 {
		return false, 0
	}
	return true, b.wait(f.cfg.PerSecond)
}

// refuse records one refusal (spent reports whether it took the last of
// the allowance; blocked requests take nothing) and reports whether to
// log it, with the refusals not logged since the last line.
func (f *failures) refuse(key netip.Prefix, now time.Time, spend bool) (log bool, unlogged int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, seen := f.addrs.use(key)
	if seen {
		b.refill(now, f.cfg.PerSecond, f.cfg.Burst)
	} else {
		b.fill(now, f.cfg.Burst)
	}
	if spend && b.tokens >= 1 {
		b.tokens--
	}
	if !b.logged.IsZero() && now.Sub(b.logged) < f.cfg.LogInterval {
		b.unlogged++
		return false, 0
	}
	unlogged, b.unlogged, b.logged = b.unlogged, 0, now
	return true, unlogged
}
