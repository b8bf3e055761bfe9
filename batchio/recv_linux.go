//go:build linux

package batchio

import (
	"fmt"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ReadBatch reads the datagrams already waiting, up to len(msgs) and at
// most BatchSize per call, with one recvmmsg that does not block.
func (c *mmsgConn) ReadBatch(msgs []Message) (int, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	n := min(len(msgs), c.batch)
	if n == 0 {
		return 0, nil
	}
	for i := range n {
		buf := msgs[i].Buf
		if len(buf) == 0 {
			n = i
			break
		}
		c.riov[i].Base = &buf[0]
		c.riov[i].SetLen(len(buf))
		h := &c.rhdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&c.rnames[i]))
		h.Namelen = unix.SizeofSockaddrInet6
		h.Flags = 0
		if c.pktinfo {
			h.Control = &c.rctl[i*pktinfoSpace]
			h.SetControllen(pktinfoSpace)
		}
	}
	c.rn = n
	if err := c.rc.Control(c.recvFn); err != nil {
		return 0, c.mapErr(err)
	}
	c.stats.recvCalls.Add(1)
	if c.rerr != 0 {
		if c.rerr == unix.EAGAIN || c.rerr == unix.EINTR {
			return 0, nil
		}
		return 0, fmt.Errorf("batchio: recvmmsg: %w", c.rerr)
	}
	got := 0
	for i := range c.rn {
		h := &c.rhdrs[i]
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			c.stats.truncated.Add(1)
			continue
		}
		if got != i {
			// Compact over a dropped truncated datagram by swapping buffers,
			// so every caller buffer stays owned by exactly one message.
			msgs[got].Buf, msgs[i].Buf = msgs[i].Buf, msgs[got].Buf
		}
		msgs[got].N = int(h.Len)
		msgs[got].Addr = decodeSockaddr(&c.rnames[i])
		msgs[got].Local = netip.Addr{}
		if c.pktinfo {
			off := i * pktinfoSpace
			msgs[got].Local = parsePacketInfo(c.rctl[off : off+min(int(h.Hdr.Controllen), pktinfoSpace)])
		}
		got++
	}
	c.stats.recvPackets.Add(uint64(got))
	return got, nil
}

// recvmmsg runs inside RawConn.Control: it reads up to rn datagrams into
// the prepared headers and leaves the count in rn or the error in rerr.
func (c *mmsgConn) recvmmsg(fd uintptr) {
	r, _, e := syscall.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&c.rhdrs[0])),
		uintptr(c.rn), unix.MSG_DONTWAIT, 0, 0)
	c.rerr = e
	if e == 0 {
		c.rn = int(r)
	}
}
