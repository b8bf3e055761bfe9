//go:build linux

package batchio

import (
	"syscall"
	"unsafe"
)

// sysHooks stand in for the kernel in tests, to make the failures a busy
// host produces and a quiet loopback socket never does: EINTR, EAGAIN and
// ENOBUFS, sendmmsg sending only part of a batch, and hard errors. Each
// hook runs inside RawConn.Control just before the real call (recvmmsg or
// sendmmsg) and decides its outcome:
//
//   - recv returns a non-zero errno to fail the call with it instead of
//     making it (nothing is read), or 0 to make the call.
//   - send sees the call as the kernel does, in headers: it gets how many
//     headers the call would send and a function that returns the bytes
//     of the i-th (0 is the head). A header is one datagram or, with GSO,
//     a run of datagrams, returned back to back (in a fresh copy), that
//     the kernel sends or fails as a whole. A non-zero errno fails the
//     call with it instead of making it (nothing is sent); otherwise the
//     real call is made with at most limit headers (limit < 1 means all),
//     which is what a short sendmmsg looks like to the caller, and the
//     kernel really sends only those. (A kernel that fails on a header
//     after the head sends the ones before it and reports that count; the
//     next call then fails with that header at the head.)
type sysHooks struct {
	recv func() syscall.Errno
	send func(count int, datagram func(i int) []byte) (limit int, errno syscall.Errno)
}

// setSysHooks installs h on a conn that is not in use. It wraps the
// method values that ReadBatch and WriteBatch hand to RawConn.Control, so
// production code holds only those fields: no check, no indirection, no
// allocation. Installing allocates the two wrappers once.
func (c *mmsgConn) setSysHooks(h sysHooks) {
	if h.recv != nil {
		realRecv := c.recvFn
		c.recvFn = func(fd uintptr) {
			if e := h.recv(); e != 0 {
				c.rerr = e
				return
			}
			realRecv(fd)
		}
	}
	if h.send != nil {
		realSend := c.sendFn
		datagram := func(i int) []byte {
			hdr := &c.whdrs[c.wn+i].Hdr
			iovs := unsafe.Slice(hdr.Iov, c.wsegs[c.wn+i])
			if len(iovs) == 1 {
				return unsafe.Slice(iovs[0].Base, iovs[0].Len)
			}
			var run []byte
			for _, iov := range iovs {
				run = append(run, unsafe.Slice(iov.Base, iov.Len)...)
			}
			return run
		}
		c.sendFn = func(fd uintptr) {
			limit, e := h.send(c.wcount, datagram)
			if e != 0 {
				c.werr = e
				return
			}
			if limit >= 1 && limit < c.wcount {
				c.wcount = limit
			}
			realSend(fd)
		}
	}
}
