package engine

import "time"

// DefaultTokenDecryptsPerSecond is the default ServerConfig.TokenDecryptsPerSecond:
// at ~0.9 µs per connect-token decryption it is ~3% of a core, and it is
// more than twice the connections per second a shard completes.
const DefaultTokenDecryptsPerSecond = 32768

// maxTokenDecryptsPerSecond bounds the configured rate.
const maxTokenDecryptsPerSecond = 1 << 24

// tokenBucket rations an expensive step: up to rate per second, with bursts
// of up to an eighth of a second's worth. It is driven by the caller's
// clock and touched by one goroutine.
type tokenBucket struct {
	rate int64 // per second; 0 means unlimited
	// credit is in units of 1/rate-seconds scaled by 1e9 (nanoseconds ×
	// rate), so refilling needs no division; one take costs 1e9.
	credit, capacity int64
	last             time.Time
}

func (b *tokenBucket) init(rate int, now time.Time) {
	if rate <= 0 {
		*b = tokenBucket{}
		return
	}
	burst := max(int64(rate)/8, 1)
	b.rate = int64(rate)
	b.capacity = burst * int64(time.Second)
	b.credit = b.capacity
	b.last = now
}

// take reports whether one more step is allowed at now.
func (b *tokenBucket) take(now time.Time) bool {
	if b.rate == 0 {
		return true
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		// Capped at a second so the product cannot overflow; a second
		// refills more than the capacity anyway.
		b.credit = min(b.credit+int64(min(elapsed, time.Second))*b.rate, b.capacity)
		b.last = now
	}
	if b.credit < int64(time.Second) {
		return false
	}
	b.credit -= int64(time.Second)
	return true
}
