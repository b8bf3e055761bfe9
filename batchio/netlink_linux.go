//go:build linux

package batchio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// routeSock is a NETLINK_ROUTE socket for the dumps an AF_XDP conn reads
// after Listen (the neighbour table). A netlink socket answers for the
// network namespace it was opened in, so one opened at Listen keeps
// answering for the conn's namespace whatever thread asks later:
// syscall.NetlinkRIB opens a socket per call, in the calling thread's
// namespace, which is another one when Listen ran in a namespace of its
// own (setns on a locked thread).
type routeSock struct {
	mu  sync.Mutex
	fd  int
	seq uint32
	buf []byte
}

// routeSockTimeout bounds a dump's wait for the kernel.
const routeSockTimeout = time.Second

func openRouteSock() (*routeSock, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("batchio: netlink socket: %w", err)
	}
	tv := unix.NsecToTimeval(int64(routeSockTimeout))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("batchio: netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("batchio: netlink socket: %w", err)
	}
	return &routeSock{fd: fd, buf: make([]byte, 1<<16)}, nil
}

func (s *routeSock) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}

// dump asks for every entry of typ (RTM_GETNEIGH, RTM_GETLINK) of family
// and returns the kernel's messages, as syscall.NetlinkRIB does.
func (s *routeSock) dump(typ, family int) ([]syscall.NetlinkMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd < 0 {
		return nil, errors.New("batchio: netlink socket closed")
	}
	s.seq++
	// struct nlmsghdr and a struct rtgenmsg of the family.
	req := make([]byte, unix.NLMSG_HDRLEN+unix.SizeofRtGenmsg)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], uint16(typ))
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_DUMP|unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(req[8:], s.seq)
	req[unix.NLMSG_HDRLEN] = byte(family)
	if err := unix.Sendto(s.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("batchio: netlink request: %w", err)
	}
	var out []syscall.NetlinkMessage
	for {
		n, from, err := unix.Recvfrom(s.fd, s.buf, 0)
		if err != nil {
			return nil, fmt.Errorf("batchio: netlink reply: %w", err)
		}
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
			continue // not the kernel
		}
		msgs, err := syscall.ParseNetlinkMessage(s.buf[:n])
		if err != nil {
			return nil, fmt.Errorf("batchio: netlink reply: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != s.seq {
				continue // a late reply to an earlier, timed-out dump
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if errno := -int32(binary.NativeEndian.Uint32(m.Data[:4])); errno != 0 {
						return nil, fmt.Errorf("batchio: netlink dump: %w", syscall.Errno(errno))
					}
				}
				return out, nil
			}
			// The message's data points into buf, which the next
			// receive overwrites.
			m.Data = append([]byte(nil), m.Data...)
			out = append(out, m)
		}
	}
}
