package agones

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff is the retry policy for sidecar calls: exponential from Initial,
// capped at Max, with jitter so that many game servers on one node do not
// retry in step.
type Backoff struct {
	// Initial is the wait after the first failure (0 means 100ms).
	Initial time.Duration
	// Max caps the wait between attempts (0 means 2s).
	Max time.Duration
	// MaxAttempts bounds the attempts of one SDK call, the first included
	// (0 means 3; 1 disables retries). The Lifecycle's wait for the sidecar
	// and its Shutdown are bounded by their context instead.
	MaxAttempts int
}

// Backoff defaults and bounds.
const (
	DefaultBackoffInitial     = 100 * time.Millisecond
	DefaultBackoffMax         = 2 * time.Second
	DefaultBackoffMaxAttempts = 3
	maxBackoff                = time.Minute
	maxBackoffAttempts        = 100
)

func (b Backoff) withDefaults() (Backoff, error) {
	if b.Initial == 0 {
		b.Initial = DefaultBackoffInitial
	}
	if b.Max == 0 {
		b.Max = max(DefaultBackoffMax, b.Initial)
	}
	if b.MaxAttempts == 0 {
		b.MaxAttempts = DefaultBackoffMaxAttempts
	}
	switch {
	case b.Initial < time.Millisecond || b.Initial > maxBackoff:
		return b, fmt.Errorf("agones: Backoff.Initial %v; allowed 1ms to %v (0 means %v)", b.Initial, maxBackoff, DefaultBackoffInitial)
	case b.Max < b.Initial || b.Max > maxBackoff:
		return b, fmt.Errorf("agones: Backoff.Max %v; allowed Initial (%v) to %v (0 means %v)", b.Max, b.Initial, maxBackoff, DefaultBackoffMax)
	case b.MaxAttempts < 1 || b.MaxAttempts > maxBackoffAttempts:
		return b, fmt.Errorf("agones: Backoff.MaxAttempts %d; allowed 1 to %d (0 means %d)", b.MaxAttempts, maxBackoffAttempts, DefaultBackoffMaxAttempts)
	}
	return b, nil
}

// delay is the wait after failed attempt n (1-based): Initial doubled per
// attempt, capped at Max, then drawn from [d/2, d].
func (b Backoff) delay(n int) time.Duration {
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleep waits d, or until ctx is done or stop (which may be nil) is
// closed; it reports whether the full wait elapsed.
func sleep(ctx context.Context, d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}
