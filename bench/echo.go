package bench

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/reliable"
)

// ServerCounters are a benchmark server's counters (EchoServer,
// GameServer, BareServer), readable from any goroutine while it runs.
type ServerCounters struct {
	PacketsIn, PacketsOut uint64 // datagrams the server read and sent
	Echoed                uint64 // payloads sent back (echo)
	Dropped               uint64 // datagrams the server dropped, any reason
	Connects              uint64
	Connected             int
	// KernelDrops is the datagrams the kernel dropped for the server's
	// sockets (shed requests, full queues).
	KernelDrops uint64
	// Game servers: inputs received, snapshots sent and sends refused,
	// ticks run and tick numbers skipped (the server fell behind).
	Inputs, Snapshots, SendErrors, Ticks, TicksSkipped uint64
	// The sockets' receive and send system calls, and the passes that
	// parked waiting for a datagram: with PacketsIn and PacketsOut, the
	// batching the load's shape allowed.
	RecvCalls, SendCalls, Parks uint64
}

func serverCounters(st engine.ServerStats) ServerCounters {
	return ServerCounters{
		PacketsIn: st.PacketsIn, PacketsOut: st.PacketsOut,
		Dropped: st.Dropped(), Connects: st.Connects, Connected: st.Connected,
		KernelDrops: st.KernelDrops, RecvCalls: st.RecvCalls, SendCalls: st.SendCalls, Parks: st.Parks,
	}
}

// EchoServer is the application of an engine.Server that sends every
// payload back to the client it came from. One goroutine (Run) polls the
// server's events and echoes; in manual mode it also drives the server
// with Update. It owns the server and closes it when Run returns.
type EchoServer struct {
	srv    *engine.Server
	manual bool
	lock   bool
	stop   atomic.Bool
	done   chan struct{}
	echoed atomic.Uint64
	handle func(*engine.Event)
}

// manualWaitSlice bounds how long a manual server's Run waits for
// traffic, so that it notices Stop promptly (nothing else may wake it).
const manualWaitSlice = 10 * time.Millisecond

// EchoConfig configures an EchoServer.
type EchoConfig struct {
	// Manual is the server's ServerConfig.Manual: Run drives it.
	Manual bool
	// LockOSThread pins Run's goroutine to its OS thread, which a manual
	// server on blocking-wait sockets needs to block in poll(2) as
	// intended.
	LockOSThread bool
}

// NewEchoServer makes the echo application of srv; Run starts it.
func NewEchoServer(srv *engine.Server, cfg EchoConfig) *EchoServer {
	e := &EchoServer{srv: srv, manual: cfg.Manual, lock: cfg.LockOSThread, done: make(chan struct{})}
	e.handle = e.onEvent // made once: Poll must not allocate a closure per call
	return e
}

// Server returns the engine server.
func (e *EchoServer) Server() *engine.Server { return e.srv }

// MaxClients returns the server's slot count.
func (e *EchoServer) MaxClients() int { return e.srv.MaxClients() }

func (e *EchoServer) onEvent(ev *engine.Event) {
	if ev.Kind == engine.EventPayload && e.srv.SendPacket(ev.ClientIndex, ev.Payload) == nil {
		e.echoed.Add(1)
	}
}

// Run echoes until Stop, then closes the server (disconnecting the
// clients) and returns its error.
func (e *EchoServer) Run() error {
	defer close(e.done)
	if e.lock {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	for !e.stop.Load() {
		now := time.Now()
		if e.manual {
			_ = e.srv.Update(now) // manual by construction
			in := e.srv.Poll(e.handle)
			e.srv.Flush()
			if in > 0 {
				continue // busy: look for more before paying for a park
			}
		} else if e.srv.Poll(e.handle) > 0 {
			continue
		}
		wait := engine.PacketSendInterval
		if e.manual {
			wait = manualWaitSlice
		}
		e.srv.Wait(now.Add(wait))
	}
	return e.srv.Close()
}

// Stop asks Run to return. In the default mode it closes the server at
// once, which wakes Run; a manual server's Run notices within its next
// wait slice (10 ms). Wait waits for Run.
func (e *EchoServer) Stop() {
	e.stop.Store(true)
	if !e.manual {
		_ = e.srv.Close() // Run's own Close is then a no-op
	}
}

// Wait blocks until Run has returned.
func (e *EchoServer) Wait() { <-e.done }

// Counters sums the shards' counters (as of each shard's last pass).
func (e *EchoServer) Counters() ServerCounters {
	c := serverCounters(e.srv.Stats())
	c.Echoed = e.echoed.Load()
	return c
}

// DropReasons returns the server's drop counts by reason name (nil if
// there were none).
func (e *EchoServer) DropReasons() map[string]uint64 {
	return DropReasons(e.srv.Stats())
}

// DropReasons names a server's drop counts by reason, for reports.
func DropReasons(st engine.ServerStats) map[string]uint64 {
	if st.Dropped() == 0 {
		return nil
	}
	m := make(map[string]uint64)
	for r, n := range st.CodecDrops {
		if n != 0 {
			m["codec: "+codec.DropReason(r).Error()] = n
		}
	}
	for r, n := range st.Drops {
		if n != 0 {
			m["server: "+engine.ServerDropReason(r).String()] = n
		}
	}
	for r, n := range st.ReliableDrops {
		if n != 0 {
			m["reliable: "+reliable.DropReason(r).String()] = n
		}
	}
	return m
}
