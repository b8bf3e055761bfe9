package bench

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

// EchoCounters are an EchoServer's counters, published after every pass of
// its loop so that other goroutines can read them while it runs.
type EchoCounters struct {
	PacketsIn, PacketsOut uint64 // datagrams the server read and sent
	Echoed                uint64 // payloads sent back
	Dropped               uint64 // datagrams the server dropped, any reason
	Connects              uint64
	Connected             int
	// KernelDrops is the datagrams the kernel dropped for the server's
	// sockets (shed requests, full queues).
	KernelDrops uint64
}

// EchoServer runs an engine.Server that sends every payload back to the
// client it came from. One goroutine (Run) owns the server: it calls
// Update, echoes, flushes, and parks in WaitRead on the first conn until a
// datagram arrives or the next 10 Hz tick is due.
type EchoServer struct {
	srv  *engine.Server
	wait batchio.Conn
	lock bool // lock Run to its OS thread (BlockingWait sockets)

	// The connected slots, kept dense by OnConnect/OnDisconnect so that the
	// echo pass visits only them.
	active []int32
	pos    []int32
	buf    []byte

	stop atomic.Bool
	done chan struct{}

	pub struct {
		in, out, echoed, dropped, connects atomic.Uint64
		connected                          atomic.Int64
	}
	statsMu sync.Mutex
	stats   engine.ServerStats // a copy for DropReasons, under statsMu
	echoed  uint64
}

// EchoConfig configures an EchoServer.
type EchoConfig struct {
	// Server configures the engine server. Its OnConnect and OnDisconnect
	// are called after the echo server's own bookkeeping.
	Server engine.ServerConfig
	// LockOSThread pins Run's goroutine to its OS thread, which a
	// batchio.Config.BlockingWait socket needs to block in poll(2) as
	// intended.
	LockOSThread bool
}

// NewEchoServer makes the server on conns; Run starts it. The conns stay the
// caller's to close (after Run returns).
func NewEchoServer(cfg EchoConfig, conns ...batchio.Conn) (*EchoServer, error) {
	if len(conns) == 0 {
		return nil, errors.New("bench: echo server needs at least one conn")
	}
	e := &EchoServer{wait: conns[0], lock: cfg.LockOSThread, buf: make([]byte, codec.MaxPayloadBytes), done: make(chan struct{})}
	sc := cfg.Server
	userConnect, userDisconnect := sc.OnConnect, sc.OnDisconnect
	sc.OnConnect = func(i int, id uint64) {
		e.pos[i] = int32(len(e.active))
		e.active = append(e.active, int32(i))
		if userConnect != nil {
			userConnect(i, id)
		}
	}
	sc.OnDisconnect = func(i int, reason engine.DisconnectReason) {
		if p := e.pos[i]; p >= 0 {
			last := e.active[len(e.active)-1]
			e.active[p] = last
			e.pos[last] = p
			e.active = e.active[:len(e.active)-1]
			e.pos[i] = -1
		}
		if userDisconnect != nil {
			userDisconnect(i, reason)
		}
	}
	srv, err := engine.NewServer(sc, conns...)
	if err != nil {
		return nil, err
	}
	e.srv = srv
	n := srv.MaxClients()
	e.active = make([]int32, 0, n)
	e.pos = make([]int32, n)
	for i := range e.pos {
		e.pos[i] = -1
	}
	return e, nil
}

// MaxClients returns the server's slot count.
func (e *EchoServer) MaxClients() int { return e.srv.MaxClients() }

// Run serves until Stop or until the wait conn fails or is closed. It stops
// the engine server (disconnecting the clients) before it returns.
func (e *EchoServer) Run() error {
	defer close(e.done)
	if e.lock {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	next := time.Now()
	for !e.stop.Load() {
		now := time.Now()
		in := e.srv.Stats().PacketsIn
		e.srv.Update(now)
		if e.echo() {
			e.srv.Flush()
		}
		e.publish()
		if !now.Before(next) {
			next = now.Add(engine.PacketSendInterval)
		}
		if e.srv.Stats().PacketsIn != in {
			continue // busy: look for more before paying for a park
		}
		if err := e.wait.WaitRead(next); err != nil {
			e.srv.Stop(time.Now())
			e.publish()
			if errors.Is(err, batchio.ErrClosed) {
				return nil
			}
			return fmt.Errorf("bench: echo server wait: %w", err)
		}
	}
	e.srv.Stop(time.Now())
	e.publish()
	return nil
}

// Stop asks Run to return; it is noticed within one tick (100 ms) or at the
// next datagram. Wait waits for it.
func (e *EchoServer) Stop() { e.stop.Store(true) }

// Wait blocks until Run has returned.
func (e *EchoServer) Wait() { <-e.done }

// echo sends every queued payload back and reports whether it sent any.
func (e *EchoServer) echo() bool {
	sent := false
	for _, i := range e.active {
		for {
			n, _, ok := e.srv.ReceivePacket(int(i), e.buf)
			if !ok {
				break
			}
			n = min(n, len(e.buf))
			if e.srv.SendPacket(int(i), e.buf[:n]) == nil {
				e.echoed++
				sent = true
			}
		}
	}
	return sent
}

func (e *EchoServer) publish() {
	st := e.srv.Stats()
	e.pub.in.Store(st.PacketsIn)
	e.pub.out.Store(st.PacketsOut)
	e.pub.echoed.Store(e.echoed)
	e.pub.dropped.Store(st.Dropped())
	e.pub.connects.Store(st.Connects)
	e.pub.connected.Store(int64(e.srv.NumConnectedClients()))
	e.statsMu.Lock()
	e.stats = st
	e.statsMu.Unlock()
}

// Counters returns the counters as of the loop's last pass. Any goroutine
// may call it.
func (e *EchoServer) Counters() EchoCounters {
	return EchoCounters{
		PacketsIn:  e.pub.in.Load(),
		PacketsOut: e.pub.out.Load(),
		Echoed:     e.pub.echoed.Load(),
		Dropped:    e.pub.dropped.Load(),
		Connects:   e.pub.connects.Load(),
		Connected:  int(e.pub.connected.Load()),
		// From the sockets themselves: safe from any goroutine.
		KernelDrops: kernelDrops(e.srv.Conns()),
	}
}

// kernelDrops sums what the kernel dropped for the conns that can tell.
func kernelDrops(conns []batchio.Conn) uint64 {
	var n uint64
	for _, c := range conns {
		if k, ok := batchio.As[batchio.Shedder](c); ok {
			n += k.KernelDrops()
		}
	}
	return n
}

// DropReasons returns the server's drop counts by reason name as of the
// loop's last pass (nil if there were none).
func (e *EchoServer) DropReasons() map[string]uint64 {
	e.statsMu.Lock()
	st := e.stats
	e.statsMu.Unlock()
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
	return m
}
