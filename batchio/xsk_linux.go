//go:build linux

package batchio

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// An AF_XDP socket: a UMEM (one anonymous mapping cut into XDPFrameSize
// frames, registered with the kernel) and four single-producer,
// single-consumer rings shared with it. The fill ring hands the kernel
// empty frames to receive into; the receive ring returns them full; the
// transmit ring hands it frames to send; the completion ring returns them
// sent. Half the frames circulate on the receive side (fill, receive,
// back to fill once the payload is copied out), half on the send side
// (a free stack, transmit, completion, back to the stack), so neither
// side can starve the other.

// xskRing is one ring. The kernel and the process each own one index;
// the other is read with an atomic load, and a slot is handed over by
// an atomic store of the owner's index after it is written, which
// orders the slot's contents before the index.
type xskRing struct {
	mem      []byte
	producer *uint32
	consumer *uint32
	flags    *uint32
	mask     uint32
	size     uint32
	addrs    []uint64       // fill and completion rings
	descs    []unix.XDPDesc // receive and transmit rings
	// Our own index and the cached other one.
	prod, cons uint32
}

type xsk struct {
	fd        int
	umem      []byte
	frames    int
	queue     int
	zeroCopy  bool
	fill, cmp xskRing
	rx, tx    xskRing
	// free is the stack of send frames not in the transmit ring.
	free []uint64
	// txOut counts frames in the transmit ring or awaiting completion.
	txOut int
	// txLeft: the last kick left frames in the transmit ring because the
	// device pushed back. In copy mode nothing but a kick (or a poll)
	// sends them, so reads and waits kick again until none are left.
	txLeft bool
	// sendto stands in for the kick's system call in tests (nil: the
	// real one).
	sendto func() syscall.Errno
}

func setsockoptPtr(fd, opt int, p unsafe.Pointer, n uintptr) error {
	_, _, e := syscall.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), n, 0)
	if e != 0 {
		return e
	}
	return nil
}

// openXSK opens an AF_XDP socket with frames UMEM frames bound to queue
// of interface ifindex. It is not yet in the program's map.
func openXSK(ifindex, queue, frames int) (x *xsk, err error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EAFNOSUPPORT) {
			return nil, fmt.Errorf("batchio: AF_XDP socket: %w: the kernel has no AF_XDP (CONFIG_XDP_SOCKETS): %w", ErrXDPUnsupported, err)
		}
		return nil, fmt.Errorf("batchio: AF_XDP socket: %w: %w", ErrXDPUnsupported, err)
	}
	x = &xsk{fd: fd, frames: frames, queue: queue}
	defer func() {
		if err != nil {
			x.close()
		}
	}()
	if x.umem, err = unix.Mmap(-1, 0, frames*XDPFrameSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE); err != nil {
		return x, fmt.Errorf("batchio: AF_XDP UMEM of %d frames: %w", frames, err)
	}
	reg := unix.XDPUmemReg{
		Addr: uint64(uintptr(unsafe.Pointer(&x.umem[0]))),
		Len:  uint64(len(x.umem)),
		Size: XDPFrameSize,
	}
	if err = setsockoptPtr(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return x, fmt.Errorf("batchio: AF_XDP UMEM registration: %w", err)
	}
	half := frames / 2
	for _, r := range []struct{ opt, n int }{
		{unix.XDP_UMEM_FILL_RING, half}, {unix.XDP_UMEM_COMPLETION_RING, half},
		{unix.XDP_RX_RING, half}, {unix.XDP_TX_RING, half},
	} {
		if err = unix.SetsockoptInt(fd, unix.SOL_XDP, r.opt, r.n); err != nil {
			return x, fmt.Errorf("batchio: AF_XDP ring size %d: %w", r.n, err)
		}
	}
	var off unix.XDPMmapOffsets
	optlen := uint32(unsafe.Sizeof(off))
	if _, _, e := syscall.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&optlen)), 0); e != 0 {
		return x, fmt.Errorf("batchio: AF_XDP ring offsets: %w", e)
	}
	if err = x.fill.mmap(fd, unix.XDP_UMEM_PGOFF_FILL_RING, &off.Fr, half, false); err != nil {
		return x, err
	}
	if err = x.cmp.mmap(fd, unix.XDP_UMEM_PGOFF_COMPLETION_RING, &off.Cr, half, false); err != nil {
		return x, err
	}
	if err = x.rx.mmap(fd, unix.XDP_PGOFF_RX_RING, &off.Rx, half, true); err != nil {
		return x, err
	}
	if err = x.tx.mmap(fd, unix.XDP_PGOFF_TX_RING, &off.Tx, half, true); err != nil {
		return x, err
	}
	// Receive frames first, so the kernel can use them from the bind on.
	for i := range half {
		x.fill.addrs[i] = uint64(i * XDPFrameSize)
	}
	x.fill.prod = uint32(half)
	atomic.StoreUint32(x.fill.producer, x.fill.prod)
	x.free = make([]uint64, 0, frames-half)
	for i := half; i < frames; i++ {
		x.free = append(x.free, uint64(i*XDPFrameSize))
	}
	// Zero-copy where the driver can, else copy; need_wakeup so an idle
	// kernel side costs no polling.
	sa := &unix.SockaddrXDP{Flags: unix.XDP_USE_NEED_WAKEUP, Ifindex: uint32(ifindex), QueueID: uint32(queue)}
	// A socket closed on the queue a moment ago holds it until its
	// pool is released, which the kernel defers to a work queue: a
	// server restarted at once would find the queue busy.
	for deadline := time.Now().Add(xskBusyWait); ; {
		err = unix.Bind(fd, sa)
		if err != unix.EBUSY || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err == unix.EBUSY {
		return x, fmt.Errorf("batchio: AF_XDP bind to queue %d: %w: %w (another AF_XDP socket holds the queue)", queue, ErrXDPUnsupported, err)
	}
	if err != nil {
		return x, fmt.Errorf("batchio: AF_XDP bind to queue %d: %w: %w", queue, ErrXDPUnsupported, err)
	}
	// In copy mode one send call builds at most this many packets
	// (default 32, Linux 6.16+ lets it be raised): a whole ring's worth
	// saves the calls a batch of 64 or more would otherwise take.
	unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, half)
	// In copy mode each frame sent is a socket buffer charged to the
	// socket's send buffer until the receiver is done with it (on a veth
	// the peer's core, when it gets to it); a full send buffer stops the
	// send call with the rest of the ring unsent until the next write.
	// The default (about 400 KiB, 300 frames) stalled a game tick's
	// snapshots behind a receiver a little behind: room for every send
	// frame instead. As root (CAP_NET_ADMIN, which AF_XDP needs too)
	// past net.core.wmem_max.
	sndbuf := (frames - half) * xskSendTruesize
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, sndbuf) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, sndbuf)
	}
	var opts struct{ flags uint32 }
	optlen = uint32(unsafe.Sizeof(opts))
	if _, _, e := syscall.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_OPTIONS,
		uintptr(unsafe.Pointer(&opts)), uintptr(unsafe.Pointer(&optlen)), 0); e == 0 {
		x.zeroCopy = opts.flags&unix.XDP_OPTIONS_ZEROCOPY != 0
	}
	return x, nil
}

// xskSendTruesize bounds what the kernel charges for one frame sent in
// copy mode: the frame's data (up to XDPFrameSize) and the socket
// buffer's own structures.
const xskSendTruesize = 2 * XDPFrameSize

// xskBusyWait bounds the wait for a queue whose last socket was just
// closed (openXSK).
const xskBusyWait = time.Second

func (r *xskRing) mmap(fd int, pgoff int64, off *unix.XDPRingOffset, n int, desc bool) error {
	entry := 8
	if desc {
		entry = int(unsafe.Sizeof(unix.XDPDesc{}))
	}
	mem, err := unix.Mmap(fd, pgoff, int(off.Desc)+n*entry, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("batchio: AF_XDP ring mapping: %w", err)
	}
	r.mem = mem
	r.producer = (*uint32)(unsafe.Pointer(&mem[off.Producer]))
	r.consumer = (*uint32)(unsafe.Pointer(&mem[off.Consumer]))
	r.flags = (*uint32)(unsafe.Pointer(&mem[off.Flags]))
	r.size, r.mask = uint32(n), uint32(n-1)
	if desc {
		r.descs = unsafe.Slice((*unix.XDPDesc)(unsafe.Pointer(&mem[off.Desc])), n)
	} else {
		r.addrs = unsafe.Slice((*uint64)(unsafe.Pointer(&mem[off.Desc])), n)
	}
	r.prod = atomic.LoadUint32(r.producer)
	r.cons = atomic.LoadUint32(r.consumer)
	return nil
}

// available is how many entries a consumer may read (receive, completion).
func (r *xskRing) available() uint32 {
	return atomic.LoadUint32(r.producer) - r.cons
}

// release hands n read entries back to the kernel.
func (r *xskRing) release(n uint32) {
	r.cons += n
	atomic.StoreUint32(r.consumer, r.cons)
}

// room is how many entries a producer may write (fill, transmit).
func (r *xskRing) room() uint32 {
	return r.size - (r.prod - atomic.LoadUint32(r.consumer))
}

// submit publishes n written entries.
func (r *xskRing) submit(n uint32) {
	r.prod += n
	atomic.StoreUint32(r.producer, r.prod)
}

func (r *xskRing) needWakeup() bool {
	return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}

// frame returns the UMEM bytes of a descriptor, or nil if it lies outside.
func (x *xsk) frame(addr uint64, n uint32) []byte {
	if addr >= uint64(len(x.umem)) || uint64(n) > uint64(len(x.umem))-addr {
		return nil
	}
	return x.umem[addr : addr+uint64(n)]
}

// reclaim moves completed send frames back to the free stack.
func (x *xsk) reclaim() {
	n := x.cmp.available()
	for i := range n {
		x.free = append(x.free, x.cmp.addrs[(x.cmp.cons+i)&x.cmp.mask])
	}
	x.cmp.release(n)
	x.txOut -= int(n)
}

// kick makes the kernel send the transmit ring (always needed in copy
// mode, where sending happens in this call). In copy mode it goes on
// until the ring is empty, as what is left waits for the next kick. The
// call stops early with EAGAIN when its budget runs out or the
// completion ring is full (reaped here), with EBUSY when the device
// pushed back (its queue is stopped, or it dropped a frame: the rest are
// still queued), with ENOBUFS when no buffer could be had; each is
// retried while the kernel takes frames, at most kickTries calls. It
// sets txLeft when the device pushed back, and reports a hard error.
func (x *xsk) kick() syscall.Errno {
	stuck := 0
	x.txLeft = true
	for range kickTries {
		before := atomic.LoadUint32(x.tx.consumer)
		var e syscall.Errno
		if x.sendto != nil {
			e = x.sendto()
		} else {
			_, _, e = syscall.RawSyscall6(unix.SYS_SENDTO, uintptr(x.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		}
		switch e {
		case 0:
			x.txLeft = atomic.LoadUint32(x.tx.consumer) != x.tx.prod
			return 0
		case unix.EAGAIN, unix.EBUSY, unix.ENOBUFS, unix.EINTR:
		default:
			// A hard error (the device gone or down) would fail again
			// at every read: what is left waits for the next write.
			x.txLeft = false
			return e
		}
		after := atomic.LoadUint32(x.tx.consumer)
		if after == x.tx.prod {
			x.txLeft = false
			return 0
		}
		if after == before {
			// No progress: a full completion ring frees up as it is
			// reaped; else the device is behind, and the next kick
			// asks again.
			if stuck++; stuck > 1 {
				return 0
			}
			x.reclaim()
		}
	}
	return 0
}

// kickTries bounds the send calls of one kick: a call sends the whole
// ring (XDP_MAX_TX_SKB_BUDGET), or 32 frames on kernels before 6.16.
const kickTries = 16

// wakeFill tells the kernel there are frames in the fill ring again, if
// it asked to be told.
func (x *xsk) wakeFill() {
	if x.fill.needWakeup() {
		syscall.RawSyscall6(unix.SYS_RECVFROM, uintptr(x.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	}
}

func (x *xsk) statistics() unix.XDPStatistics {
	var s unix.XDPStatistics
	optlen := uint32(unsafe.Sizeof(s))
	syscall.Syscall6(unix.SYS_GETSOCKOPT, uintptr(x.fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&s)), uintptr(unsafe.Pointer(&optlen)), 0)
	return s
}

func (x *xsk) close() {
	for _, r := range []*xskRing{&x.fill, &x.cmp, &x.rx, &x.tx} {
		if r.mem != nil {
			unix.Munmap(r.mem)
			r.mem = nil
		}
	}
	if x.fd >= 0 {
		unix.Close(x.fd)
		x.fd = -1
	}
	// After the socket: the kernel unpins the UMEM when it lets go.
	if x.umem != nil {
		unix.Munmap(x.umem)
		x.umem = nil
	}
}
