package bench

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

// ShardedEcho runs an engine.ShardedServer whose application goroutine
// (Run) sends every payload back to its sender: shards receive, decrypt and
// hand payloads over through their rings; Run polls them and queues the
// echoes, which the owning shard seals and sends.
type ShardedEcho struct {
	srv    *engine.ShardedServer
	stop   atomic.Bool
	done   chan struct{}
	echoed atomic.Uint64
	handle func(*engine.Event)

	statsMu sync.Mutex
	stats   []engine.ShardedStats // reused by Counters, so reading them allocates nothing
}

// NewShardedEcho opens the shards' sockets and starts them; Run starts the
// echo.
func NewShardedEcho(cfg engine.ShardedConfig) (*ShardedEcho, error) {
	srv, err := engine.NewShardedServer(cfg)
	if err != nil {
		return nil, err
	}
	e := &ShardedEcho{srv: srv, done: make(chan struct{}), stats: make([]engine.ShardedStats, 0, srv.NumShards())}
	e.handle = e.onEvent // made once: Poll must not allocate a closure per call
	return e, nil
}

// Server returns the sharded server.
func (e *ShardedEcho) Server() *engine.ShardedServer { return e.srv }

// MaxClients returns the slot count.
func (e *ShardedEcho) MaxClients() int { return e.srv.MaxClients() }

func (e *ShardedEcho) onEvent(ev *engine.Event) {
	if ev.Kind == engine.EventPayload && e.srv.SendPacket(ev.ClientIndex, ev.Payload) == nil {
		e.echoed.Add(1)
	}
}

// Run echoes until Stop, then closes the server (disconnecting clients).
func (e *ShardedEcho) Run() error {
	defer close(e.done)
	for !e.stop.Load() {
		if e.srv.Poll(e.handle) == 0 {
			e.srv.WaitEvents(time.Now().Add(engine.PacketSendInterval))
		}
	}
	return e.srv.Close()
}

// Stop asks Run to return.
func (e *ShardedEcho) Stop() { e.stop.Store(true) }

// Wait blocks until Run has returned.
func (e *ShardedEcho) Wait() { <-e.done }

// Counters sums the shards' counters (as of each shard's last loop pass).
func (e *ShardedEcho) Counters() EchoCounters {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	e.stats = e.srv.AppendStats(e.stats[:0])
	var c EchoCounters
	for _, st := range e.stats {
		c.PacketsIn += st.PacketsIn
		c.PacketsOut += st.PacketsOut
		c.Dropped += st.Dropped()
		c.Connects += st.Connects
		c.KernelDrops += st.KernelDrops
	}
	c.Echoed = e.echoed.Load()
	c.Connected = e.srv.NumConnectedClients()
	return c
}

// DropReasons returns the drop counts by reason name, summed over shards.
func (e *ShardedEcho) DropReasons() map[string]uint64 {
	var m map[string]uint64
	add := func(k string, n uint64) {
		if n == 0 {
			return
		}
		if m == nil {
			m = make(map[string]uint64)
		}
		m[k] += n
	}
	for _, st := range e.srv.Stats() {
		for r, n := range st.CodecDrops {
			add("codec: "+codec.DropReason(r).Error(), n)
		}
		for r, n := range st.Drops {
			add("server: "+engine.ServerDropReason(r).String(), n)
		}
	}
	return m
}
