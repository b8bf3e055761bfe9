//go:build js && wasm

// Command wasm is the browser client: the engine's netcode client compiled
// to WebAssembly, over WebTransport datagrams (package web/wtconn). It
// hands an API object to the page's netcode.js (globalThis.__netcodeInit)
// and then serves its calls; netcode.js is the interface pages use.
package main

import (
	"fmt"
	"math"
	"net/netip"
	"sync"
	"syscall/js"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/reliable"
	"github.com/netcode-go/netcode/ring"
	"github.com/netcode-go/netcode/web/wtconn"
)

// tick is the longest the loop sleeps while a session is active: the
// client's timers run at 10 Hz, datagrams and sends wake it at once.
const tick = 10 * time.Millisecond

// player is the page's one client. Its fields are guarded by mu; calls
// into JavaScript that may call back (the page's handlers) are made with
// mu released.
type player struct {
	mu       sync.Mutex
	client   *engine.Client
	conns    [2]*wtconn.Conn // IPv4, IPv6
	reliable bool
	state    engine.ClientState
	buf      []byte
	kick     chan struct{}

	onState   js.Value // function(code, name)
	onPayload js.Value // function(Array<Uint8Array>)
}

func main() {
	p := &player{kick: make(chan struct{}, 1), buf: make([]byte, reliable.DefaultConfig().MaxPacketSize)}
	api := js.Global().Get("Object").New()
	api.Set("connect", js.FuncOf(p.connect))
	api.Set("send", js.FuncOf(p.send))
	api.Set("disconnect", js.FuncOf(p.disconnect))
	api.Set("state", js.FuncOf(func(js.Value, []js.Value) any {
		p.mu.Lock()
		defer p.mu.Unlock()
		return stateObject(p.state)
	}))
	api.Set("rtt", js.FuncOf(p.rtt))
	api.Set("stats", js.FuncOf(p.stats))
	api.Set("bench", js.FuncOf(bench))
	api.Set("setHandlers", js.FuncOf(func(_ js.Value, args []js.Value) any {
		p.mu.Lock()
		p.onState, p.onPayload = args[0], args[1]
		p.mu.Unlock()
		return nil
	}))
	init := js.Global().Get("__netcodeInit")
	if init.Type() != js.TypeFunction {
		js.Global().Get("console").Call("error", "netcode.wasm: load it with netcode.js (no globalThis.__netcodeInit)")
		return
	}
	init.Invoke(api)
	p.loop()
}

func stateObject(s engine.ClientState) js.Value {
	o := js.Global().Get("Object").New()
	o.Set("code", int(s))
	o.Set("name", s.String())
	return o
}

// connect(token Uint8Array, hashes Array<Uint8Array>, path string,
// reliable bool) starts connecting and returns "" or what was wrong.
func (p *player) connect(_ js.Value, args []js.Value) any {
	if len(args) < 4 {
		return "connect: want (token, certificateHashes, path, reliable)"
	}
	token := make([]byte, args[0].Get("length").Int())
	js.CopyBytesToGo(token, args[0])
	var hashes [][32]byte
	for i := range args[1].Length() {
		var h [32]byte
		v := args[1].Index(i)
		if v.Get("length").Int() != len(h) {
			return fmt.Sprintf("certificate hash %d: %d bytes; want 32 (SHA-256)", i, v.Get("length").Int())
		}
		js.CopyBytesToGo(h[:], v)
		hashes = append(hashes, h)
	}
	path, rel := args[2].String(), args[3].Bool()

	p.mu.Lock()
	old := p.state
	err := p.connectLocked(token, hashes, path, rel)
	st := p.state
	p.mu.Unlock()
	p.notifyState(old, st)
	p.wake()
	if err != nil {
		return err.Error()
	}
	return ""
}

func (p *player) connectLocked(token []byte, hashes [][32]byte, path string, rel bool) error {
	if p.client != nil {
		p.client.Close() // disconnect packets, if a session is in progress
		p.client.Flush()
	}
	for _, c := range p.conns {
		if c != nil {
			go func() { c.Drain(500 * time.Millisecond); c.Close() }()
		}
	}
	p.client, p.conns = nil, [2]*wtconn.Conn{}
	locals := [2]netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:0"), netip.MustParseAddrPort("[::]:0")}
	var conns []batchio.Conn
	for i, local := range locals {
		c, err := wtconn.New(wtconn.Config{Local: local, Path: path, CertificateHashes: hashes})
		if err != nil {
			return err
		}
		p.conns[i] = c
		conns = append(conns, c)
	}
	cfg := engine.ClientConfig{OnStateChange: func(_, s engine.ClientState) { p.state = s }}
	if rel {
		rc := reliable.DefaultConfig()
		cfg.Reliable = &rc
	}
	client, err := engine.NewClient(cfg, conns...)
	if err != nil {
		return err
	}
	p.client, p.reliable = client, rel
	p.state = client.State()
	return client.Connect(token, time.Now())
}

// send(payload Uint8Array) sends a payload at once and returns "" or what
// was wrong.
func (p *player) send(_ js.Value, args []js.Value) any {
	if len(args) < 1 {
		return "send: want (payload)"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client == nil {
		return engine.ErrClientNotConnected.Error()
	}
	n := args[0].Get("length").Int()
	if n > len(p.buf) {
		return fmt.Sprintf("send: payload of %d bytes; at most %d", n, len(p.buf))
	}
	js.CopyBytesToGo(p.buf[:n], args[0])
	if err := p.client.SendPacket(p.buf[:n]); err != nil {
		return err.Error()
	}
	p.client.Flush()
	return ""
}

// disconnect() sends the disconnect packets and returns a promise that
// resolves once the browser has sent them and closed the sessions.
func (p *player) disconnect(js.Value, []js.Value) any {
	p.mu.Lock()
	old := p.state
	conns := p.conns
	if p.client != nil {
		p.client.Disconnect(time.Now())
		p.client.Flush()
	}
	st := p.state
	p.mu.Unlock()
	p.notifyState(old, st)
	var executor js.Func
	executor = js.FuncOf(func(_ js.Value, args []js.Value) any {
		resolve := args[0]
		executor.Release()
		go func() {
			for _, c := range conns {
				if c != nil {
					c.Drain(500 * time.Millisecond)
				}
			}
			resolve.Invoke()
		}()
		return nil
	})
	return js.Global().Get("Promise").New(executor)
}

// rtt() is the reliable endpoint's least round trip over its last 512
// samples, in milliseconds, NaN without one. The least, because a sample
// also holds the server's wait for a packet to carry the ack (up to a
// keep-alive interval, 100 ms): the least is the path's.
func (p *player) rtt(js.Value, []js.Value) any {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client == nil || !p.reliable {
		return math.NaN()
	}
	st, err := p.client.ReliableStats()
	if err != nil {
		return math.NaN()
	}
	return float64(st.RTTMin)
}

// stats() returns the client's and the conns' counters.
func (p *player) stats(js.Value, []js.Value) any {
	p.mu.Lock()
	defer p.mu.Unlock()
	o := js.Global().Get("Object").New()
	if p.client == nil {
		return o
	}
	st := p.client.Stats()
	o.Set("packetsIn", st.PacketsIn)
	o.Set("packetsOut", st.PacketsOut)
	o.Set("sendDropped", st.SendDropped)
	var codecDrops uint64
	for _, n := range st.CodecDrops {
		codecDrops += n
	}
	o.Set("codecDrops", codecDrops)
	var ws wtconn.Stats
	for _, c := range p.conns {
		s := c.Stats()
		ws.SessionsOpened += s.SessionsOpened
		ws.SessionsFailed += s.SessionsFailed
		ws.SessionsClosed += s.SessionsClosed
		ws.Sent += s.Sent
		ws.SendDropped += s.SendDropped
		ws.QueueDropped += s.QueueDropped
		ws.TooLong += s.TooLong
	}
	o.Set("sessionsOpened", ws.SessionsOpened)
	o.Set("sessionsFailed", ws.SessionsFailed)
	o.Set("sessionsClosed", ws.SessionsClosed)
	o.Set("datagramsSent", ws.Sent)
	o.Set("datagramsDropped", ws.SendDropped+ws.QueueDropped+ws.TooLong)
	return o
}

func (p *player) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *player) notifyState(old, s engine.ClientState) {
	if old != s && p.onState.Type() == js.TypeFunction {
		p.onState.Invoke(int(s), s.String())
	}
}

// loop runs the client: Update on every datagram, send and tick, then the
// received payloads and any state change go to the page.
func (p *player) loop() {
	timer := time.NewTimer(tick)
	for {
		p.mu.Lock()
		old := p.state
		var batch js.Value
		var notify [2]<-chan struct{}
		active := p.client != nil && (p.state.IsConnecting() || p.state == engine.Connected)
		if active {
			p.client.Update(time.Now())
			batch = p.drain()
			for i, c := range p.conns {
				notify[i] = c.Notify()
			}
		}
		st := p.state
		onPayload := p.onPayload
		if active && !st.IsConnecting() && st != engine.Connected {
			// The session ended without disconnect() (refused, timed
			// out, disconnected by the server): close the browser's
			// sessions rather than leave them to the server's timeouts.
			for _, c := range p.conns {
				go c.Drain(100 * time.Millisecond)
			}
		}
		p.mu.Unlock()
		p.notifyState(old, st)
		if !batch.IsUndefined() && onPayload.Type() == js.TypeFunction {
			onPayload.Invoke(batch)
		}
		if !active {
			<-p.kick
			continue
		}
		timer.Reset(tick)
		select {
		case <-p.kick:
		case <-notify[0]:
		case <-notify[1]:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// drain returns the received payloads as an array of Uint8Arrays, or
// undefined when there are none. p.mu is held.
func (p *player) drain() js.Value {
	batch := js.Undefined()
	for {
		n, _, ok := p.client.ReceivePacket(p.buf)
		if !ok {
			return batch
		}
		if batch.IsUndefined() {
			batch = js.Global().Get("Array").New()
		}
		v := js.Global().Get("Uint8Array").New(n)
		js.CopyBytesToJS(v, p.buf[:n])
		batch.Call("push", v)
	}
}

// bench(n, size) seals and opens n payloads of size bytes, as the client
// and server do per payload, and returns nanoseconds per payload (both
// ends), so a page can measure the wasm's crypto speed in its browser.
func bench(_ js.Value, args []js.Value) any {
	n, size := args[0].Int(), args[1].Int()
	if n < 1 || size < 1 || size > codec.MaxPayloadBytes {
		return math.NaN()
	}
	keyBytes := make([]byte, codec.KeyBytes)
	for i := range keyBytes {
		keyBytes[i] = byte(i)
	}
	const protocolID = 0x1122334455667788
	key, err := aead.NewPacketKey(keyBytes, protocolID)
	if err != nil {
		return math.NaN()
	}
	var replay ring.Replay
	replay.Reset()
	read := codec.ReadParams{Role: codec.RoleServer, ProtocolID: protocolID, Key: key, Replay: &replay}
	payload := make([]byte, size)
	buf := make([]byte, codec.MaxPacketBytes)
	var pkt codec.Packet
	start := time.Now()
	for i := range n {
		w, err := codec.WritePayloadPacket(buf, uint64(i), payload, key)
		if err != nil {
			return math.NaN()
		}
		if err := codec.ReadPacket(buf[:w], &read, &pkt); err != nil {
			return math.NaN()
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}
