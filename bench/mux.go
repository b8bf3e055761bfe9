//go:build linux

package bench

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// Shared-socket limits.
const (
	// muxBatch is how many datagrams one recvmmsg or sendmmsg moves.
	muxBatch = 64
	// muxRecvBatches bounds the batches one pass reads before it runs the
	// clients' timers, so a flood of echoes cannot starve the sends.
	muxRecvBatches = 16
	// muxTickBatch bounds the clients one pass ticks before it reads
	// again, so a crowd of due clients cannot leave the replies to pile
	// up (and be timed late) for long.
	muxTickBatch = 256
	// muxSocketBuffer is each shared socket's buffer size: it carries the
	// traffic of many clients.
	muxSocketBuffer = 8 << 20
	// muxHostsPerSubnet: client addresses avoid .0 and .255 in the last
	// byte.
	muxHostsPerSubnet = 254
)

// muxNet is the block shared-socket clients take their addresses from:
// 127.0.0.0/8 on loopback (every address in it is local on Linux), or a
// /16 routed to the load as local (the testbed's 198.19.0.0/16).
type muxNet struct {
	b0, b1 byte
	wide   bool // a /8: two bytes count the subnets
}

var loopbackNet = muxNet{b0: 127, wide: true}

// newMuxNet checks p: an IPv4 /8 or /16 (zero: 127.0.0.0/8).
func newMuxNet(p netip.Prefix) (muxNet, error) {
	if !p.IsValid() {
		return loopbackNet, nil
	}
	a := p.Addr()
	if !a.Is4() || (p.Bits() != 8 && p.Bits() != 16) || p.Masked() != p {
		return muxNet{}, fmt.Errorf("bench: client net %v; want an IPv4 /8 or /16 prefix such as 198.19.0.0/16", p)
	}
	b := a.As4()
	if p.Bits() == 8 {
		return muxNet{b0: b[0], wide: true}, nil
	}
	return muxNet{b0: b[0], b1: b[1]}, nil
}

// capacity is how many clients one worker can address.
func (n muxNet) capacity() int {
	if n.wide {
		return 255 << 8 * muxHostsPerSubnet
	}
	return 256 * muxHostsPerSubnet
}

// addr returns the address of a worker's j-th client: in a /8,
// b0.b.c.d with d in 1..254, counting up from b0.1.0.1; in a /16,
// b0.b1.c.d from b0.b1.0.1. The worker's wildcard socket receives what
// the server sends to any of them.
func (n muxNet) addr(j int) netip.Addr {
	x := j / muxHostsPerSubnet
	if n.wide {
		return netip.AddrFrom4([4]byte{n.b0, byte(1 + x>>8), byte(x), byte(1 + j%muxHostsPerSubnet)})
	}
	return netip.AddrFrom4([4]byte{n.b0, n.b1, byte(x), byte(1 + j%muxHostsPerSubnet)})
}

// index inverts addr; it returns -1 for an address addr never returns.
func (n muxNet) index(a netip.Addr) int {
	if !a.Is4() {
		return -1
	}
	b := a.As4()
	if b[0] != n.b0 || b[3] == 0 || b[3] == 255 {
		return -1
	}
	if n.wide {
		if b[1] == 0 {
			return -1
		}
		x := int(b[1]-1)<<8 | int(b[2])
		return x*muxHostsPerSubnet + int(b[3]) - 1
	}
	if b[1] != n.b1 {
		return -1
	}
	return int(b[2])*muxHostsPerSubnet + int(b[3]) - 1
}

// muxAddr and muxIndex are addr and index on loopback.
func muxAddr(j int) netip.Addr  { return loopbackNet.addr(j) }
func muxIndex(a netip.Addr) int { return loopbackNet.index(a) }

// muxWorker drives many clients through one socket bound to the IPv4
// wildcard address. Each client has its own address in 127.0.0.0/8 on the
// worker's port, so the server still sees one address per client, but the
// worker receives every client's datagrams with one recvmmsg (the kernel
// reports each one's destination: batchio's PacketInfo) and sends every
// client's datagrams with one sendmmsg, each from its client's address.
// Clients run on the worker's goroutine when a datagram arrives for them
// or their timer is due (a heap of wake times), so a thousand idle clients
// cost nothing, and nothing is allocated per packet.
type muxWorker struct {
	l       *Load
	net     muxNet
	conn    batchio.Conn
	clients []*loadClient
	views   []*muxConn
	wakes   wakeHeap

	rx      []batchio.Message
	rxNext  []int32 // per received datagram: the next one for the same client, -1 ends
	touched []int32 // clients with datagrams in the current batch
	tx      []batchio.Message
	txN     int

	// fast counts the replies accounted without opening them (see
	// account) until they are added to shard, once per batch.
	fast  LoadTotals
	shard *loadShard
	pkt   codec.Packet // open's

	// sealBuf and sealLens hold the payloads sealed ahead for a window
	// (preseal.go), reused from window to window; sealID is the last
	// request served.
	sealBuf  []byte
	sealLens []uint16
	sealID   uint64

	// Counters: owner goroutine only, read after Close.
	stray     uint64 // datagrams for an address no client has
	unread    uint64 // datagrams a client did not take in its tick
	sendDrops uint64 // datagrams the socket did not send
}

// muxConn is one client's view of its worker's socket, a batchio.Conn
// used only from the worker's goroutine: reads return the datagrams the
// worker received for the client, and writes join the worker's next
// sendmmsg with the client's address as their source.
type muxConn struct {
	w     *muxWorker
	local netip.AddrPort
	head  int32 // first datagram in w.rx for this client, -1: none
	tail  int32 // last datagram in w.rx for this client
}

var _ batchio.Conn = (*muxConn)(nil)

var errMuxWait = errors.New("bench: a shared-socket client is driven by its worker and never waits")

func newMuxWorker(l *Load, capacity int) (*muxWorker, error) {
	conn, err := batchio.Listen(netip.AddrPortFrom(netip.IPv4Unspecified(), 0), batchio.Config{
		BatchSize: muxBatch, RecvBuffer: muxSocketBuffer, SendBuffer: muxSocketBuffer, PacketInfo: true, XDP: l.cfg.XDP,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: shared client socket: %w", err)
	}
	if capacity > l.net.capacity() {
		conn.Close()
		return nil, fmt.Errorf("bench: %d clients on one shared socket; its address block has room for %d (add workers)", capacity, l.net.capacity())
	}
	w := &muxWorker{
		l:       l,
		net:     l.net,
		conn:    conn,
		clients: make([]*loadClient, 0, capacity),
		views:   make([]*muxConn, 0, capacity),
		rx:      batchio.NewMessages(muxBatch, codec.MaxPacketBytes),
		rxNext:  make([]int32, muxBatch),
		touched: make([]int32, 0, muxBatch),
		tx:      batchio.NewMessages(muxBatch, codec.MaxPacketBytes),
		shard:   l.shards[len(l.workers)%len(l.shards)],
	}
	w.wakes.init(capacity)
	return w, nil
}

// attach gives load client i the worker's next address and returns its
// conn. The client itself is registered by adopt once it exists.
func (w *muxWorker) attach(i int) (batchio.Conn, error) {
	j := len(w.views)
	if j == cap(w.views) {
		return nil, fmt.Errorf("bench: worker full at %d clients", j)
	}
	v := &muxConn{w: w, local: netip.AddrPortFrom(w.net.addr(j), w.conn.LocalAddr().Port()), head: -1}
	w.views = append(w.views, v)
	return v, nil
}

// wake ends the worker's wait, from any goroutine (Load.Close).
func (w *muxWorker) wake() {
	if k, ok := batchio.As[batchio.Waker](w.conn); ok {
		k.Wake()
	}
}

// adopt registers the clients attached to this worker, in attach order.
func (w *muxWorker) adopt(c *loadClient) {
	c.kslot = len(w.clients)
	w.clients = append(w.clients, c)
}

// run is the worker's goroutine: it loops: read batches and tick the
// clients they were for, tick the clients whose time has come (a client
// not yet started waits for its paced start time), send, and park until
// the earliest wake time or a datagram.
func (w *muxWorker) run() {
	l := w.l
	defer l.wg.Done()
	defer func() {
		for _, c := range w.clients {
			l.setUp(c, false)
		}
	}()
	gen := ^uint64(0)
	for {
		now := time.Now()
		if l.stopping.Load() {
			for _, c := range w.clients {
				if c.running {
					c.cl.Disconnect(now)
				}
			}
			w.flush()
			return
		}
		if g := l.activeGen.Load(); g != gen {
			// The active set changed (or this is the start): every
			// client looks at it now.
			gen = g
			for j := range w.clients {
				w.wakes.set(j, 0)
			}
		}
		if r := l.sealReq.Load(); r != nil && r.id != w.sealID {
			w.sealID = r.id
			w.preseal(r)
		}
		if !w.receive() {
			return
		}
		now = time.Now()
		more := w.tickDue(now)
		w.flush()
		if more {
			continue // read what has come in before ticking the rest
		}
		deadline := time.Time{}
		if j, at := w.wakes.top(); j >= 0 && at != maxWake {
			deadline = l.start.Add(time.Duration(at))
		}
		if deadline.IsZero() || deadline.After(now) {
			if err := w.conn.WaitRead(deadline); err != nil {
				return
			}
		}
	}
}

// tickDue ticks the clients whose wake time has come, at most
// muxTickBatch of them, and reports whether more are due.
func (w *muxWorker) tickDue(now time.Time) bool {
	nowNs := int64(now.Sub(w.l.start))
	for range muxTickBatch {
		j, at := w.wakes.top()
		if j < 0 || at > nowNs {
			return false
		}
		w.tick(j, now)
	}
	j, at := w.wakes.top()
	return j >= 0 && at <= nowNs
}

// receive reads up to muxRecvBatches batches and ticks each client that
// got datagrams, once per batch; replies that a client accounts without
// opening (account) do not tick it. It returns false when the socket
// fails.
func (w *muxWorker) receive() bool {
	defer w.addFast()
	for range muxRecvBatches {
		n, err := w.conn.ReadBatch(w.rx)
		if err != nil {
			return false
		}
		if n == 0 {
			return true
		}
		now := time.Now()
		// Chain each client's datagrams in arrival order, then tick the
		// clients; their conns' ReadBatch walks the chains.
		for i := range n {
			j := w.net.index(w.rx[i].Local)
			if j < 0 || j >= len(w.views) {
				w.stray++
				continue
			}
			if w.open(w.clients[j], &w.rx[i], now) || w.account(w.clients[j], &w.rx[i], now) {
				continue
			}
			w.clients[j].lastFull = now.Add(-fullPathStagger(j))
			v := w.views[j]
			if v.head < 0 {
				v.head = int32(i)
				w.touched = append(w.touched, int32(j))
			} else {
				w.rxNext[v.tail] = int32(i)
			}
			v.tail = int32(i)
			w.rxNext[i] = -1
		}
		for _, j := range w.touched {
			w.clients[j].got = true
			w.tick(int(j), now)
			v := w.views[j]
			for ; v.head >= 0; v.head = w.rxNext[v.head] {
				w.unread++
			}
		}
		w.touched = w.touched[:0]
		if n < len(w.rx) {
			return true
		}
	}
	return true
}

// account counts a reply to a client that does not open its replies
// (LoadConfig.SampleEvery) from its size and clear packet sequence (a
// bare reply's stamp sequence), without handing it to the client, and
// reports whether it did. It hands the client anything else: a reply of
// another size or kind, one a second (to keep the session alive), and a
// game snapshot that its sequence cannot place in or out of the window
// yet, which must be opened (Load.placeByEdges). It does not allocate.
func (w *muxWorker) account(c *loadClient, m *batchio.Message, now time.Time) bool {
	l := w.l
	if c.sampled || !c.up || m.N > len(m.Buf) || l.kc != nil {
		// With l.kc the kernel counted what this would count, and
		// passes on only what the client must open.
		return false
	}
	p := m.Buf[:m.N]
	var seq uint64
	if l.cfg.Bare {
		if len(p) != l.replySize {
			return false
		}
		_, seq, _ = ReadStamp(p)
	} else {
		var size int
		var ok bool
		if seq, size, ok = readPayloadHeader(p); !ok || size != l.replySize {
			return false
		}
	}
	if now.Sub(c.lastFull) >= fullPathEvery {
		return false
	}
	if l.cfg.Mode == LoadGame {
		switch l.placeByEdges(c, seq, int64(now.Sub(l.start))) {
		case zoneIgnore:
			return true
		case zoneOpen:
			return false
		}
	}
	if !l.observe(c, &w.fast, seq) {
		return true
	}
	w.fast.Received++
	if l.cfg.Mode == LoadGame {
		c.winRecv.Add(1)
	}
	return true
}

// fullPathStagger is client j's share of fullPathSpread.
func fullPathStagger(j int) time.Duration {
	return fullPathSpread * time.Duration(j%64) / 64
}

// addFast adds the replies account counted to the worker's shard.
func (w *muxWorker) addFast() {
	f := &w.fast
	if f.Received == 0 && f.Duplicates == 0 && f.Reordered == 0 && f.TooOld == 0 {
		return
	}
	s := w.shard
	s.mu.Lock()
	s.Received += f.Received
	s.Duplicates += f.Duplicates
	s.Reordered += f.Reordered
	s.TooOld += f.TooOld
	s.mu.Unlock()
	*f = LoadTotals{}
}

// tick runs client j and files its next wake time.
func (w *muxWorker) tick(j int, now time.Time) {
	c := w.clients[j]
	deadline, ok := w.l.tick(c, now)
	if !ok || deadline.IsZero() {
		w.wakes.set(j, maxWake)
		return
	}
	w.wakes.set(j, int64(deadline.Sub(w.l.start)))
}

// queue copies one datagram into the next sendmmsg, sending the batch
// first when it is full.
func (w *muxWorker) queue(m *batchio.Message, from netip.Addr) {
	w.queuePacket(m.Buf[:m.N], m.Addr, from)
}

// queuePacket adds a copy of p, from from to to, to the worker's batch.
func (w *muxWorker) queuePacket(p []byte, to netip.AddrPort, from netip.Addr) {
	if w.txN == len(w.tx) {
		w.flush()
	}
	t := &w.tx[w.txN]
	t.N = copy(t.Buf, p)
	t.Addr = to
	t.Local = from
	w.txN++
}

func (w *muxWorker) flush() {
	if w.txN == 0 {
		return
	}
	n, _ := w.conn.WriteBatch(w.tx[:w.txN])
	w.sendDrops += uint64(w.txN - max(n, 0))
	w.txN = 0
}

// ReadBatch returns the datagrams the worker received for this client in
// its current batch.
func (v *muxConn) ReadBatch(msgs []batchio.Message) (int, error) {
	n := 0
	rx := v.w.rx
	for v.head >= 0 && n < len(msgs) {
		m := &rx[v.head]
		v.head = v.w.rxNext[v.head]
		if m.N > len(msgs[n].Buf) {
			v.w.unread++
			continue
		}
		msgs[n].N = copy(msgs[n].Buf, m.Buf[:m.N])
		msgs[n].Addr = m.Addr
		n++
	}
	return n, nil
}

// WaitRead is not used: the worker waits for all its clients.
func (v *muxConn) WaitRead(time.Time) error { return errMuxWait }

// WriteBatch queues msgs on the worker's socket, to be sent from the
// client's address.
func (v *muxConn) WriteBatch(msgs []batchio.Message) (int, error) {
	for i := range msgs {
		if msgs[i].N > 0 && msgs[i].N <= len(msgs[i].Buf) {
			v.w.queue(&msgs[i], v.local.Addr())
		}
	}
	return len(msgs), nil
}

// LocalAddr returns the client's own address.
func (v *muxConn) LocalAddr() netip.AddrPort { return v.local }

// Close does nothing: the worker owns the socket.
func (v *muxConn) Close() error { return nil }

// maxWake parks a client for good.
const maxWake = int64(^uint64(0) >> 1)

// wakeHeap is a binary min-heap of client indices keyed by wake time (ns
// since the load's start), with each client's position so a key can
// change in place: O(log n) per tick, no allocation.
type wakeHeap struct {
	heap []int32 // client indices
	pos  []int32 // client index -> position in heap, -1: absent
	at   []int64 // client index -> wake time
}

func (h *wakeHeap) init(n int) {
	h.heap = make([]int32, 0, n)
	h.pos = make([]int32, n)
	h.at = make([]int64, n)
	for i := range h.pos {
		h.pos[i] = -1
	}
}

// top returns the client with the earliest wake time, or -1.
func (h *wakeHeap) top() (int, int64) {
	if len(h.heap) == 0 {
		return -1, 0
	}
	j := h.heap[0]
	return int(j), h.at[j]
}

// set files client j under wake time at.
func (h *wakeHeap) set(j int, at int64) {
	h.at[j] = at
	p := h.pos[j]
	if p < 0 {
		p = int32(len(h.heap))
		h.heap = append(h.heap, int32(j))
		h.pos[j] = p
	}
	h.down(h.up(int(p)))
}

func (h *wakeHeap) less(a, b int) bool { return h.at[h.heap[a]] < h.at[h.heap[b]] }

func (h *wakeHeap) swap(a, b int) {
	h.heap[a], h.heap[b] = h.heap[b], h.heap[a]
	h.pos[h.heap[a]] = int32(a)
	h.pos[h.heap[b]] = int32(b)
}

func (h *wakeHeap) up(i int) int {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h.swap(i, parent)
		i = parent
	}
	return i
}

func (h *wakeHeap) down(i int) {
	n := len(h.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}
