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
// link-layer addresses the AF_XDP path sends to) and the links' XDP
// programs. Both are dumps, rare and off the per-packet path.

// usableNUD are the neighbour states whose address can be sent to.
const usableNUD = unix.NUD_REACHABLE | unix.NUD_STALE | unix.NUD_DELAY | unix.NUD_PROBE | unix.NUD_PERMANENT

// readNeighbours returns the usable neighbour entries of interface ifindex,
// IPv4 and IPv6.
func readNeighbours(ifindex int, into map[netip.Addr][6]byte) error {
	rib, err := syscall.NetlinkRIB(unix.RTM_GETNEIGH, unix.AF_UNSPEC)
	if err != nil {
		return fmt.Errorf("batchio: neighbour table: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
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
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			continue
		}
		var ip netip.Addr
		var mac []byte
		for _, a := range attrs {
			switch a.Attr.Type {
			case unix.NDA_DST:
				ip, _ = netip.AddrFromSlice(a.Value)
			case unix.NDA_LLADDR:
				mac = a.Value
			}
		}
		if ip.IsValid() && len(mac) == 6 {
			into[ip.Unmap()] = [6]byte(mac)
		}
	}
	return nil
}

// linkXDPProg returns the id of the XDP program attached to interface
// ifindex in any mode, 0 if none.
func linkXDPProg(ifindex int) (uint32, error) {
	rib, err := syscall.NetlinkRIB(unix.RTM_GETLINK, unix.AF_UNSPEC)
	if err != nil {
		return 0, fmt.Errorf("batchio: link table: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return 0, fmt.Errorf("batchio: link table: %w", err)
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
			return 0, fmt.Errorf("batchio: link %d: %w", ifindex, err)
		}
		for _, a := range attrs {
			if a.Attr.Type != unix.IFLA_XDP {
				continue
			}
			// Nested attributes: IFLA_XDP_PROG_ID is the program of
			// the one attached mode.
			b := a.Value
			for len(b) >= 4 {
				l := int(binary.NativeEndian.Uint16(b[0:2]))
				t := binary.NativeEndian.Uint16(b[2:4])
				if l < 4 || l > len(b) {
					break
				}
				if t == unix.IFLA_XDP_PROG_ID && l >= 8 {
					return binary.NativeEndian.Uint32(b[4:8]), nil
				}
				b = b[min((l+3)&^3, len(b)):]
			}
		}
		return 0, nil
	}
	return 0, fmt.Errorf("batchio: no link with index %d", ifindex)
}
