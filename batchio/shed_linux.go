//go:build linux

package batchio

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// udpHeaderLen is where a UDP socket filter finds the payload: the kernel
// runs it on the datagram from its UDP header on.
const udpHeaderLen = 8

// shedFilter assembles a socket filter that keeps about keep of the
// datagrams whose first payload byte is prefix (the kernel's per-packet
// random number against a threshold) and every other datagram whole. A
// datagram with no payload fails the first load and is dropped, as the
// server would drop it.
func shedFilter(prefix byte, keep float64) ([]unix.SockFilter, error) {
	threshold := uint32(math.Min(math.Max(keep, 0)*(1<<32), math.MaxUint32))
	raw, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: udpHeaderLen, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(prefix), SkipTrue: 3},
		bpf.LoadExtension{Num: bpf.ExtRand},
		bpf.JumpIf{Cond: bpf.JumpLessThan, Val: threshold, SkipTrue: 1},
		bpf.RetConstant{Val: 0},
		bpf.RetConstant{Val: math.MaxUint32},
	})
	if err != nil {
		return nil, fmt.Errorf("batchio: shedding filter: %w", err)
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return prog, nil
}

// SetShedding installs, replaces or (keep >= 1) removes the socket's
// shedding filter. Replacing is atomic: no datagram sees the socket
// without a filter in between.
func (c *mmsgConn) SetShedding(prefix byte, keep float64) error {
	if math.IsNaN(keep) || keep < 0 {
		return fmt.Errorf("batchio: shedding keep fraction %v; allowed 0 to 1", keep)
	}
	if c.limit != nil {
		// The socket's one filter slot holds the source limit, which
		// sheds too.
		return c.limit.setShedding(prefix, keep)
	}
	var serr error
	var control func(fd uintptr)
	if keep >= 1 {
		control = func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DETACH_FILTER, 0)
			if serr == unix.ENOENT {
				serr = nil // no filter to remove
			}
		}
	} else {
		prog, err := shedFilter(prefix, keep)
		if err != nil {
			return err
		}
		fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
		control = func(fd uintptr) {
			serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog)
		}
	}
	if err := c.rc.Control(control); err != nil {
		return c.mapErr(err)
	}
	if serr != nil {
		return fmt.Errorf("batchio: set shedding filter (keep %v): %w", keep, serr)
	}
	return nil
}

// KernelDrops returns how many datagrams the kernel dropped for the socket
// before they could be read: its receive queue was full, or its filter
// (shedding, the per-source limit) turned them away (SO_MEMINFO's count, which wraps at 2^32). It is
// a system call, safe from any goroutine; 0 if the socket is closed.
func (c *mmsgConn) KernelDrops() uint64 {
	m := &c.meminfo
	m.mu.Lock()
	defer m.mu.Unlock()
	m.size, m.errno = uint32(unsafe.Sizeof(m.info)), 0
	if c.rc.Control(m.fn) != nil || m.errno != 0 {
		return 0
	}
	return uint64(m.info[unix.SK_MEMINFO_DROPS])
}

// meminfo is KernelDrops' getsockopt state, kept in the conn (with the
// control function made once) so that a stats reader does not allocate:
// a closure over locals would move them to the heap on every call.
type meminfo struct {
	mu    sync.Mutex
	info  [unix.SK_MEMINFO_VARS]uint32
	size  uint32
	errno unix.Errno
	fn    func(fd uintptr)
}

func (m *meminfo) read(fd uintptr) {
	_, _, m.errno = unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&m.info[0])), uintptr(unsafe.Pointer(&m.size)), 0)
}
