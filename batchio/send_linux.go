//go:build linux

package batchio

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WriteBatch sends msgs with sendmmsg, BatchSize at a time. A partial send
// resumes where the kernel stopped; EINTR, EAGAIN and ENOBUFS are retried a
// bounded number of times; a datagram that still fails (or has an address
// of the wrong family) is dropped and counted. With GSO, a run of
// datagrams goes as one header and is sent or dropped whole. It returns
// how many datagrams were sent.
func (c *mmsgConn) WriteBatch(msgs []Message) (int, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	sent, plain := 0, 0
	for len(msgs) > 0 {
		n, headers := c.prepare(msgs, plain)
		if n == 0 {
			c.stats.sendDropped.Add(1)
			msgs = msgs[1:]
			plain = max(plain-1, 0)
			continue
		}
		done, consumed, resendPlain, err := c.sendChunk(headers)
		sent += done
		if err != nil {
			return sent, err
		}
		msgs = msgs[consumed:]
		plain = max(plain-consumed, resendPlain)
	}
	return sent, nil
}

// prepare fills send headers from the front of msgs, at most BatchSize
// datagrams, and returns how many messages and headers it used. It stops
// before a message that cannot be sent (which the next round finds first
// and drops), so n is 0 when the first cannot. The first plain messages
// get a header each even with GSO on: they are being resent after a GSO
// send failed.
func (c *mmsgConn) prepare(msgs []Message, plain int) (n, headers int) {
	gso := c.gso.Load()
	limit := min(len(msgs), c.batch)
	for n < limit {
		m := &msgs[n]
		nameLen := encodeSockaddr(&c.wnames[headers], m.Addr, c.ipv6)
		if nameLen == 0 || m.N <= 0 || m.N > len(m.Buf) {
			break
		}
		segs := 1
		if gso && n >= plain {
			segs = c.gsoRun(msgs[n:limit])
		}
		for k := n; k < n+segs; k++ {
			c.wiov[k].Base = &msgs[k].Buf[0]
			c.wiov[k].SetLen(msgs[k].N)
		}
		h := &c.whdrs[headers].Hdr
		h.Namelen = nameLen
		h.Iov = &c.wiov[n]
		h.SetIovlen(segs)
		if c.wctl != nil {
			segmentSize := 0
			if segs > 1 {
				segmentSize = m.N
			}
			c.setControl(headers, m.Local, segmentSize)
		}
		c.wsegs[headers] = segs
		headers++
		n += segs
	}
	return n, headers
}

// sendChunk sends the first n prepared headers. It returns the datagrams
// sent and the messages consumed (sent or dropped). It stops early when a
// GSO header fails in a way its datagrams sent one by one might not
// (gsoPathError): consumed then ends before that header, and resendPlain
// says how many messages to send without GSO. If no GSO send has worked
// on this socket yet, GSO goes off for good: the kernel has it but the
// path does not. Once it has worked, such an error more likely comes from
// the datagrams (a bad Local), so GSO stays on.
func (c *mmsgConn) sendChunk(n int) (sent, consumed, resendPlain int, err error) {
	off, retries := 0, 0
	for off < n {
		c.wcount = n - off
		c.wn = off
		if err := c.rc.Control(c.sendFn); err != nil {
			return sent, consumed, 0, c.mapErr(err)
		}
		c.stats.sendCalls.Add(1)
		switch c.werr {
		case 0:
			// sendmmsg counts headers; the stats and callers count datagrams.
			packets, batches := 0, 0
			for _, segs := range c.wsegs[off : off+c.wcount] {
				packets += segs
				if segs > 1 {
					batches++
				}
			}
			if batches > 0 {
				c.gsoWorked = true
				c.stats.gsoBatches.Add(uint64(batches))
			}
			off += c.wcount
			sent += packets
			consumed += packets
			c.stats.sendPackets.Add(uint64(packets))
			retries = 0
		case unix.EINTR, unix.EAGAIN, unix.ENOBUFS:
			if retries < sendRetries {
				retries++
				c.stats.sendRetries.Add(1)
				continue
			}
			fallthrough
		default:
			segs := c.wsegs[off]
			if segs > 1 && gsoPathError(c.werr) {
				if !c.gsoWorked {
					c.gso.Store(false)
				}
				return sent, consumed, segs, nil
			}
			// The header at the head failed: drop its datagrams and go on.
			off++
			consumed += segs
			retries = 0
			c.stats.sendDropped.Add(uint64(segs))
		}
	}
	return sent, consumed, 0, nil
}

// sendmmsg runs inside RawConn.Control: it sends wcount headers from wn.
func (c *mmsgConn) sendmmsg(fd uintptr) {
	r, _, e := syscall.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&c.whdrs[c.wn])),
		uintptr(c.wcount), unix.MSG_DONTWAIT, 0, 0)
	c.werr = e
	if e == 0 {
		c.wcount = int(r)
	}
}
