//go:build linux

package batchio

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Netlink reads of the kernel's routing tables: the neighbour table (the
// link-layer addresses the AF_XDP path sends to), the links' receive
// queues and XDP programs. All are dumps, rare and off the per-packet
// path. The neighbour table is read through the conn's own socket
// (routeSock), so it is the table of the namespace the conn was opened in.

// usableNUD are the neighbour states whose address can be sent to.
const usableNUD = unix.NUD_REACHABLE | unix.NUD_STALE | unix.NUD_DELAY | unix.NUD_PROBE | unix.NUD_PERMANENT

// readNeighbours returns the usable neighbour entries of interface ifindex,
// IPv4 and IPv6, in rs's namespace.
func readNeighbours(rs *routeSock, ifindex int, into map[netip.Addr][6]byte) error {
	msgs, err := rs.dump(unix.RTM_GETNEIGH, unix.AF_UNSPEC)
	if err != nil {
		return fmt.Errorf("batchio: neighbour table: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWNEIGH || len(m.Data) < unix.SizeofNdMsg {
			continue
		}
		nd := (*unix.NdMsg)(unsafe.Pointer(&m.Data[0]))
		if int(nd.Ifindex) != ifindex || nd.State&usableNUD == 0 {
			continue
		}
		// The attributes follow the ndmsg (syscall.ParseNetlinkRouteAttr
		// knows links, addresses and routes, not neighbours).
		var ip netip.Addr
		var mac []byte
		forAttrs(m.Data[nlmAlign(unix.SizeofNdMsg):], func(typ uint16, v []byte) {
			switch typ {
			case unix.NDA_DST:
				ip, _ = netip.AddrFromSlice(v)
			case unix.NDA_LLADDR:
				mac = v
			}
		})
		if ip.IsValid() && len(mac) == 6 {
			into[ip.Unmap()] = [6]byte(mac)
		}
	}
	return nil
}

// linkAttrs returns the attributes of interface ifindex in the calling
// thread's namespace.
func linkAttrs(ifindex int) ([]syscall.NetlinkRouteAttr, error) {
	rib, err := syscall.NetlinkRIB(unix.RTM_GETLINK, unix.AF_UNSPEC)
	if err != nil {
		return nil, fmt.Errorf("batchio: link table: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return nil, fmt.Errorf("batchio: link table: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWLINK || len(m.Data) < unix.SizeofIfInfomsg {
			continue
		}
		ifi := (*unix.IfInfomsg)(unsafe.Pointer(&m.Data[0]))
		if int(ifi.Index) != ifindex {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			return nil, fmt.Errorf("batchio: link %d: %w", ifindex, err)
		}
		return attrs, nil
	}
	return nil, fmt.Errorf("batchio: no link with index %d", ifindex)
}

// rxQueues counts the receive queues of interface ifindex in the calling
// thread's namespace, 1 if unknown. (Not from /sys/class/net: sysfs shows
// the links of the namespace it was mounted in, not the thread's.)
func rxQueues(ifindex int) int {
	attrs, err := linkAttrs(ifindex)
	if err != nil {
		return 1
	}
	for _, a := range attrs {
		if a.Attr.Type == unix.IFLA_NUM_RX_QUEUES && len(a.Value) >= 4 {
			if n := int(binary.NativeEndian.Uint32(a.Value)); n > 0 {
				return n
			}
		}
	}
	return 1
}

// linkXDPProg returns the id of the XDP program attached to interface
// ifindex in any mode, 0 if none, in the calling thread's namespace.
func linkXDPProg(ifindex int) (uint32, error) {
	attrs, err := linkAttrs(ifindex)
	if err != nil {
		return 0, err
	}
	for _, a := range attrs {
		if a.Attr.Type != unix.IFLA_XDP {
			continue
		}
		// Nested attributes: IFLA_XDP_PROG_ID is the program of the
		// one attached mode.
		var id uint32
		forAttrs(a.Value, func(typ uint16, v []byte) {
			if typ == unix.IFLA_XDP_PROG_ID && len(v) >= 4 {
				id = binary.NativeEndian.Uint32(v)
			}
		})
		return id, nil
	}
	return 0, nil
}

func nlmAlign(n int) int { return (n + unix.NLA_ALIGNTO - 1) &^ (unix.NLA_ALIGNTO - 1) }

// forAttrs calls f with each route attribute in b (type and value), up to
// the first malformed one.
func forAttrs(b []byte, f func(typ uint16, v []byte)) {
	for len(b) >= unix.SizeofRtAttr {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		if l < unix.SizeofRtAttr || l > len(b) {
			return
		}
		f(binary.NativeEndian.Uint16(b[2:4]), b[unix.SizeofRtAttr:l])
		b = b[min(nlmAlign(l), len(b)):]
	}
}
