//go:build linux

package batchio

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// xdpConn is a Conn on an AF_XDP socket, with the ordinary UDP socket of
// the same port beside it (kern). Reads take the receive ring first and
// the kernel socket when poll says it has datagrams (or every
// kernCheckEvery reads, so a busy owner that never waits does not starve
// it); writes build frames for peers whose link-layer address is known
// and hand the rest to the kernel socket, which resolves it (ARP or
// neighbour discovery) as for any datagram.
//
// mu is held shared by every method but Close, which takes it exclusively
// after waking a wait: no descriptor is closed (and its number reused)
// under a call in progress.
type xdpConn struct {
	mu     sync.RWMutex
	closed atomic.Bool
	kern   *mmsgConn
	kfd    int
	x      *xsk
	att    *xdpAttachment
	local  netip.AddrPort
	port   uint16
	batch  int
	// pktinfo (Config.PacketInfo): reads report each datagram's
	// destination in Message.Local and writes send from it.
	pktinfo bool

	srcMAC     [6]byte
	src4, src6 netip.Addr // source addresses of built frames (invalid: none)
	maxPay4    int        // largest payload sent as a frame (MTU and frame size)
	maxPay6    int
	ifindex    int

	// Link-layer addresses: learned from received frames (a reply goes
	// back where its request came from) and read from the neighbour
	// table on a miss, at most once per neighRefresh. Both are bounded:
	// a full learned table is cleared.
	learned   macTable
	neigh     map[netip.Addr][6]byte
	neighAt   time.Time
	rs        *routeSock // the neighbour table's socket, in the conn's namespace
	kmsgs     []Message  // writes handed to the kernel socket
	reads     int
	kernReady bool

	efd         int
	wakePending atomic.Bool
	w           *xdpWaiter
	drain       [8]byte

	stats struct {
		recvPackets, sendCalls, sendPackets, sendDropped atomic.Uint64
		truncated, waits, recvCalls                      atomic.Uint64
		kernRx, kernTx, malformed, noFrame, partial      atomic.Uint64
		txLeft                                           atomic.Uint64
		byReason                                         [framePort + 1]atomic.Uint64
	}
}

var (
	_ Conn           = (*xdpConn)(nil)
	_ StatsReader    = (*xdpConn)(nil)
	_ Waker          = (*xdpConn)(nil)
	_ XDPStatsReader = (*xdpConn)(nil)
)

const (
	// txRetryWait is how long a wait sleeps at most while the device
	// holds back frames of the transmit ring.
	txRetryWait    = 100 * time.Microsecond
	neighRefresh   = time.Second
	kernCheckEvery = 64
)

// listenXDP opens n conns on addr's port, conn i on receive queue i of
// cfg.XDP.Interface, with one program for all (ListenGroup with XDP).
func listenXDP(addr netip.AddrPort, n int, cfg Config) ([]Conn, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	xc := cfg.XDP
	if cfg.SourceLimit.Rate > 0 && !cfg.SourceLimit.Optional && xc.Mode != XDPTry {
		return nil, errors.New("batchio: SourceLimit is a socket filter, which datagrams on the AF_XDP path never pass; set SourceLimit.Optional to run without it, or XDP.Mode XDPOff")
	}
	kcfg := cfg
	kcfg.XDP = XDP{}
	kerns, err := ListenGroup(addr, n, kcfg)
	if err != nil {
		return nil, err
	}
	conns, err := wrapXDP(kerns, xc, cfg.BatchSize, cfg.PacketInfo)
	if err != nil {
		if xc.Mode == XDPTry {
			return kerns, nil
		}
		for _, c := range kerns {
			c.Close()
		}
		return nil, err
	}
	return conns, nil
}

func wrapXDP(kerns []Conn, xc XDP, batch int, pktinfo bool) (conns []Conn, err error) {
	iface, err := net.InterfaceByName(xc.Interface)
	if err != nil {
		return nil, fmt.Errorf("batchio: XDP interface %q: %w", xc.Interface, err)
	}
	if len(iface.HardwareAddr) != 6 {
		return nil, fmt.Errorf("batchio: XDP interface %s: %w: not Ethernet (link-layer address %v)", iface.Name, ErrXDPUnsupported, iface.HardwareAddr)
	}
	local := kerns[0].LocalAddr()
	queues := rxQueues(iface.Index)
	if len(kerns) > queues {
		return nil, fmt.Errorf("batchio: XDP on %s: %d conns but %d receive queues; want at most one conn per queue", iface.Name, len(kerns), queues)
	}
	bound := local.Addr()
	f := xdpFilter{port: local.Port(), addr: bound, mtu: iface.MTU, pre: xc.Prefilter}
	// An unspecified address takes both families, as the program sees
	// them; a bound one only its own.
	f.v4 = bound.Is4() || bound.IsUnspecified()
	f.v6 = bound.Is6() || bound.IsUnspecified()
	src4, src6, err := ifaceSources(iface, bound)
	if err != nil {
		return nil, err
	}
	att, err := attachXDP(iface, f, queues, xc.Mode)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			for _, c := range conns {
				c.(*xdpConn).closeXDP()
			}
			att.release()
		}
	}()
	for i, k := range kerns {
		x, err := openXSK(iface.Index, i, xc.Frames)
		if err != nil {
			return conns, err
		}
		if err := att.xsks.Put(uint32(i), uint32(x.fd)); err != nil {
			x.close()
			return conns, fmt.Errorf("batchio: XDP socket map: %w", err)
		}
		c := &xdpConn{
			kern: k.(*mmsgConn), x: x, att: att, local: local, port: local.Port(), batch: batch, pktinfo: pktinfo,
			src4: src4, src6: src6, ifindex: iface.Index,
			maxPay4: min(iface.MTU-ipv4HeaderLen-udpHdrLen, XDPFrameSize-frameHeader4),
			maxPay6: min(iface.MTU-ipv6HeaderLen-udpHdrLen, XDPFrameSize-frameHeader6),
			learned: newMACTable(maxMACs), neigh: make(map[netip.Addr][6]byte),
			kmsgs: make([]Message, 0, batch), efd: -1,
		}
		copy(c.srcMAC[:], iface.HardwareAddr)
		if c.rs, err = openRouteSock(); err != nil {
			x.close()
			return conns, err
		}
		if c.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
			c.rs.close()
			x.close()
			return conns, fmt.Errorf("batchio: eventfd: %w", err)
		}
		c.kern.rc.Control(func(fd uintptr) { c.kfd = int(fd) })
		if c.w, err = newXDPWaiter([3]int{xdpEvXsk: x.fd, xdpEvKern: c.kfd, xdpEvWake: c.efd}); err != nil {
			unix.Close(c.efd)
			c.rs.close()
			x.close()
			return conns, err
		}
		if i > 0 {
			att.hold()
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// ifaceSources picks the source addresses of built frames: the bound
// address, or the interface's first address of each family (a global one
// before a link-local one).
func ifaceSources(iface *net.Interface, bound netip.Addr) (src4, src6 netip.Addr, err error) {
	if !bound.IsUnspecified() {
		if bound.Is4() {
			return bound, netip.Addr{}, nil
		}
		return netip.Addr{}, bound, nil
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return src4, src6, fmt.Errorf("batchio: XDP interface %s addresses: %w", iface.Name, err)
	}
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		ip := p.Addr().Unmap()
		switch {
		case ip.Is4() && !src4.IsValid():
			src4 = ip
		case ip.Is6() && (!src6.IsValid() || src6.IsLinkLocalUnicast() && !ip.IsLinkLocalUnicast()):
			src6 = ip
		}
	}
	if !src4.IsValid() && !src6.IsValid() {
		return src4, src6, fmt.Errorf("batchio: XDP interface %s has no IP address", iface.Name)
	}
	return src4, src6, nil
}

func (c *xdpConn) LocalAddr() netip.AddrPort { return c.local }

// ReadBatch copies the payloads of the receive ring's datagrams into msgs
// and returns their frames to the fill ring at once; then it reads the
// kernel socket if that may have datagrams.
func (c *xdpConn) ReadBatch(msgs []Message) (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed.Load() {
		return 0, ErrClosed
	}
	want := min(len(msgs), c.batch)
	x := c.x
	if x.txLeft {
		x.kick()
	}
	avail := min(x.rx.available(), uint32(want))
	got := 0
	var u udpFrame
	for i := range avail {
		d := x.rx.descs[(x.rx.cons+i)&x.rx.mask]
		f := x.frame(d.Addr, d.Len)
		// The frame goes back to the fill ring whatever it held: the
		// ring has room, as every receive frame is in one of the two.
		x.fill.addrs[(x.fill.prod+i)&x.fill.mask] = d.Addr &^ (XDPFrameSize - 1)
		r := frameShort
		if f != nil {
			r = parseFrame(f, c.port, &u)
		}
		if r != frameOK {
			c.stats.malformed.Add(1)
			c.stats.byReason[r].Add(1)
			continue
		}
		if u.partial {
			c.stats.partial.Add(1)
		}
		m := &msgs[got]
		if u.n > len(m.Buf) {
			c.stats.truncated.Add(1)
			continue
		}
		m.N = copy(m.Buf, f[u.off:u.off+u.n])
		m.Addr = u.src
		m.Local = netip.Addr{}
		if c.pktinfo {
			m.Local = u.dst
		}
		c.learned.learn(u.src.Addr(), &u.srcMAC)
		got++
	}
	if avail > 0 {
		x.rx.release(avail)
		x.fill.submit(avail)
		x.wakeFill()
		c.stats.recvCalls.Add(1)
	}
	c.reads++
	if got < want && (c.kernReady || c.reads%kernCheckEvery == 0) {
		n, err := c.kern.ReadBatch(msgs[got:want])
		if err != nil {
			return got, err
		}
		c.kernReady = n == want-got
		c.stats.kernRx.Add(uint64(n))
		got += n
	}
	c.stats.recvPackets.Add(uint64(got))
	return got, nil
}

// lookup returns the link-layer address to send to ip.
func (c *xdpConn) lookup(ip netip.Addr) ([6]byte, bool) {
	if mac, ok := c.learned.get(ip); ok {
		return mac, true
	}
	if mac, ok := c.neigh[ip]; ok {
		return mac, true
	}
	if now := time.Now(); now.Sub(c.neighAt) >= neighRefresh {
		c.neighAt = now
		clear(c.neigh)
		if readNeighbours(c.rs, c.ifindex, c.neigh) == nil && len(c.neigh) > maxMACs {
			clear(c.neigh)
		}
		if mac, ok := c.neigh[ip]; ok {
			return mac, true
		}
	}
	return [6]byte{}, false
}

// WriteBatch sends each datagram as a frame on the transmit ring when its
// peer's link-layer address is known and it fits the MTU, and through the
// kernel socket otherwise.
func (c *xdpConn) WriteBatch(msgs []Message) (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed.Load() {
		return 0, ErrClosed
	}
	x := c.x
	x.reclaim()
	c.kmsgs = c.kmsgs[:0]
	room := x.tx.room()
	var queued uint32
	sent := 0
	for i := range msgs {
		m := &msgs[i]
		if m.N < 0 || m.N > len(m.Buf) {
			c.stats.sendDropped.Add(1)
			continue
		}
		dst := netip.AddrPortFrom(m.Addr.Addr().Unmap(), m.Addr.Port())
		var src netip.Addr
		maxPay := c.maxPay4
		if dst.Addr().Is4() {
			src = c.src4
		} else {
			src, maxPay = c.src6, c.maxPay6
		}
		if l := m.Local.Unmap(); c.pktinfo && l.IsValid() && !l.IsUnspecified() && l.Is4() == dst.Addr().Is4() {
			src = l
		}
		var mac [6]byte
		ok := false
		if src.IsValid() && m.N <= maxPay {
			mac, ok = c.lookup(dst.Addr())
		}
		if !ok {
			if len(c.kmsgs) == cap(c.kmsgs) {
				c.flushKern(&sent)
			}
			c.kmsgs = append(c.kmsgs, *m)
			continue
		}
		if len(x.free) == 0 || queued == room {
			// Hand the kernel what is queued and take back what it
			// has sent before giving up on this datagram.
			c.submitTx(queued)
			queued = 0
			x.reclaim()
			room = x.tx.room()
			if len(x.free) == 0 || room == 0 {
				c.stats.noFrame.Add(1)
				c.stats.sendDropped.Add(1)
				continue
			}
		}
		addr := x.free[len(x.free)-1]
		x.free = x.free[:len(x.free)-1]
		hl := frameHeaderLen(src)
		f := x.umem[addr : addr+XDPFrameSize]
		copy(f[hl:], m.Buf[:m.N])
		n := buildFrame(f, &c.srcMAC, &mac, netip.AddrPortFrom(src, c.port), dst, m.N)
		x.tx.descs[(x.tx.prod+queued)&x.tx.mask] = unix.XDPDesc{Addr: addr, Len: uint32(n)}
		queued++
		sent++
	}
	c.submitTx(queued)
	c.flushKern(&sent)
	return sent, nil
}

// submitTx publishes n transmit descriptors and kicks the kernel.
func (c *xdpConn) submitTx(n uint32) {
	if n == 0 {
		return
	}
	x := c.x
	x.tx.submit(n)
	x.txOut += int(n)
	c.stats.sendCalls.Add(1)
	c.stats.sendPackets.Add(uint64(n))
	if x.tx.needWakeup() || !x.zeroCopy {
		// A failed kick leaves the frames queued for the next one.
		x.kick()
		if x.txLeft {
			c.stats.txLeft.Add(1)
		}
	}
}

func (c *xdpConn) flushKern(sent *int) {
	if len(c.kmsgs) == 0 {
		return
	}
	n, _ := c.kern.WriteBatch(c.kmsgs)
	*sent += n
	c.stats.kernTx.Add(uint64(n))
	clear(c.kmsgs) // drop the references to the caller's buffers
	c.kmsgs = c.kmsgs[:0]
}

// Wake ends a WaitRead in progress, or the next one.
func (c *xdpConn) Wake() {
	if c.wakePending.Swap(true) || c.closed.Load() {
		return
	}
	c.poke()
}

func (c *xdpConn) poke() {
	c.mu.RLock()
	if c.efd >= 0 {
		var one = [8]byte{1}
		syscall.RawSyscall(unix.SYS_WRITE, uintptr(c.efd), uintptr(unsafe.Pointer(&one[0])), 8)
	}
	c.mu.RUnlock()
}

// WaitRead waits for the AF_XDP socket, the kernel socket or a Wake, on
// Go's netpoller (xdpWaiter).
func (c *xdpConn) WaitRead(deadline time.Time) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed.Load() {
		return ErrClosed
	}
	if c.wakePending.Swap(false) || c.x.rx.available() > 0 || c.kernReady {
		return nil
	}
	c.stats.waits.Add(1)
	for {
		until := deadline
		if c.x.txLeft {
			// Only a kick sends what the device held back: come back
			// for another.
			if c.x.kick(); c.x.txLeft {
				if retry := time.Now().Add(txRetryWait); until.IsZero() || until.After(retry) {
					until = retry
				}
			}
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return nil
		}
		err := c.w.wait(until)
		if c.closed.Load() {
			return ErrClosed
		}
		if err != nil {
			return fmt.Errorf("batchio: epoll wait: %w", err)
		}
		if c.w.wake {
			syscall.RawSyscall(unix.SYS_READ, uintptr(c.efd), uintptr(unsafe.Pointer(&c.drain[0])), 8)
			c.wakePending.Store(false)
			return nil
		}
		if c.w.kern {
			c.kernReady = true
		}
		if c.w.xsk || c.w.kern {
			return nil
		}
	}
}

// Stats returns the conn's counters. Send and receive calls count ring
// batches; KernelRx/KernelTx in XDPStats are the kernel socket's share.
func (c *xdpConn) Stats() Stats {
	return Stats{
		RecvCalls: c.stats.recvCalls.Load(), RecvPackets: c.stats.recvPackets.Load(),
		SendCalls: c.stats.sendCalls.Load(), SendPackets: c.stats.sendPackets.Load() + c.stats.kernTx.Load(),
		SendDropped: c.stats.sendDropped.Load(), Truncated: c.stats.truncated.Load(),
		Waits: c.stats.waits.Load(),
	}
}

func (c *xdpConn) XDPStats() XDPStats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := XDPStats{
		Mode: c.att.mode, Queue: c.x.queue,
		KernelRx: c.stats.kernRx.Load(), KernelTx: c.stats.kernTx.Load(),
		Malformed: c.stats.malformed.Load(), NoFrame: c.stats.noFrame.Load(),
		PartialChecksum: c.stats.partial.Load(), TxLeft: c.stats.txLeft.Load(),
	}
	for r := range s.MalformedBy {
		s.MalformedBy[r] = c.stats.byReason[r+1].Load()
	}
	if c.closed.Load() {
		return s
	}
	s.ZeroCopy = c.x.zeroCopy
	st := c.x.statistics()
	// The kernel's rx_dropped counts a frame dropped for an empty fill
	// ring (as well as in rx_fill_ring_empty_descs), not one dropped for
	// a full receive ring.
	s.RxDropped = st.Rx_dropped + st.Rx_ring_full
	s.RxRingFull, s.RxFillEmpty, s.TxInvalid = st.Rx_ring_full, st.Rx_fill_ring_empty_descs, st.Tx_invalid_descs
	return s
}

// Close wakes a wait, waits for calls in progress, and releases the
// socket, the kernel socket and (the group's last) the program.
func (c *xdpConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.poke()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeXDP()
	return c.kern.Close()
}

// closeXDP releases what the conn holds of the AF_XDP path.
func (c *xdpConn) closeXDP() {
	c.closed.Store(true)
	if c.w != nil {
		c.w.close()
		c.w = nil
	}
	if c.efd >= 0 {
		unix.Close(c.efd)
		c.efd = -1
	}
	if c.x != nil {
		c.x.close()
	}
	if c.rs != nil {
		c.rs.close()
	}
	c.att.release()
}
