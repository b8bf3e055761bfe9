package agones

import (
	"runtime"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine/agones/agonestest"
)

// fastRetry keeps retries quick in tests.
var fastRetry = Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}

// newSDK returns an SDK for sc through sc's dial-counting client.
func newSDK(t *testing.T, sc *agonestest.Sidecar, cfg Config) *SDK {
	t.Helper()
	cfg.Address = sc.Addr()
	if cfg.Client == nil {
		cfg.Client = sc.Client()
	}
	if cfg.Retry == (Backoff{}) {
		cfg.Retry = fastRetry
	}
	s, err := NewSDK(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// within fails t unless fn returns within d: a liveness bound, generous
// enough for a loaded machine, not a performance claim.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// checkNoLeak fails t if goroutines started during the test outlive it.
// Call it first, so that its cleanup runs after the sidecar's.
func checkNoLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("%d goroutines before the test, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
