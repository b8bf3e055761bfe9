package reliable_test

import (
	"runtime"
	"testing"

	"github.com/netcode-go/netcode/reliable"
)

// endpointBudget is what one endpoint may cost with the default config
// (about 19.4 KiB measured; the margin absorbs allocator size classes),
// pool buffers aside: 16,384 endpoints must fit in 1 GiB with room left
// for their shard pools.
const endpointBudget = 24 << 10

// TestEndpointMemory measures an endpoint's heap with the default config.
func TestEndpointMemory(t *testing.T) {
	const n = 512
	c := reliable.DefaultConfig()
	pool, err := reliable.NewPool(c, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	eps := make([]*reliable.Endpoint, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range eps {
		eps[i] = mustNew(t, c, pool)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (after.HeapAlloc - before.HeapAlloc) / n
	runtime.KeepAlive(eps)
	t.Logf("%d bytes per endpoint (default config); a pool buffer is %d bytes", per, pool.BufferBytes())
	if per > endpointBudget {
		t.Errorf("%d bytes per endpoint, budget %d", per, endpointBudget)
	}
	// 16,384 endpoints and a pool of one buffer per 4 endpoints.
	total := 16384*per + 16384/4*uint64(pool.BufferBytes())
	if total > 1<<30 {
		t.Errorf("16,384 endpoints and their pools: %d bytes, over 1 GiB", total)
	}
	t.Logf("16,384 endpoints + 4,096 pool buffers: %.0f MiB", float64(total)/(1<<20))
}
