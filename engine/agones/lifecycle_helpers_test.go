package agones

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitFor polls cond every millisecond for up to 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitReady waits for l's Ready, for up to 10s.
func waitReady(t *testing.T, l *Lifecycle) {
	t.Helper()
	select {
	case <-l.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("never Ready")
	}
}

// noLifecycleGoroutines fails t if Lifecycle goroutines remain after
// what (which waited for them). A goroutine past its last statement may
// still show for a moment, hence the short poll.
func noLifecycleGoroutines(t *testing.T, what string) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); lifecycleGoroutines() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d Lifecycle goroutines after %s", lifecycleGoroutines(), what)
		}
	}
}

// lifecycleGoroutines counts goroutines running Lifecycle code now.
func lifecycleGoroutines() int {
	buf := make([]byte, 1<<20)
	n := 0
	for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "engine/agones.(*Lifecycle)") || strings.Contains(g, "engine/agones.(*setTracker)") || strings.Contains(g, "engine/agones.(*counterTracker)") {
			n++
		}
	}
	return n
}

// fakeServer is a Server whose players, capacity and liveness tests set.
type fakeServer struct {
	mu       sync.Mutex
	live     bool
	players  []uint64
	capacity int
}

func newFakeServer(capacity int, players ...uint64) *fakeServer {
	return &fakeServer{live: true, players: players, capacity: capacity}
}

func (f *fakeServer) Live() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live
}

func (f *fakeServer) Players(dst []uint64) []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append(dst, f.players...)
}

func (f *fakeServer) Capacity() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.capacity
}

func (f *fakeServer) setLive(v bool) {
	f.mu.Lock()
	f.live = v
	f.mu.Unlock()
}

func (f *fakeServer) setCapacity(n int) {
	f.mu.Lock()
	f.capacity = n
	f.mu.Unlock()
}

func (f *fakeServer) connect(ids ...uint64) {
	f.mu.Lock()
	f.players = append(f.players, ids...)
	f.mu.Unlock()
}

func (f *fakeServer) disconnect(id uint64) {
	f.mu.Lock()
	if i := slices.Index(f.players, id); i >= 0 {
		f.players = slices.Delete(f.players, i, i+1)
	}
	f.mu.Unlock()
}

var _ Server = (*fakeServer)(nil)
