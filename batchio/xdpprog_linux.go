//go:build linux

package batchio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// The XDP program of an AF_XDP group, for each frame (R6 the xdp_md):
// an Ethernet II frame, no longer than the MTU, of IPv4 (version 4, no options, not a fragment) or
// IPv6 (UDP right after the fixed header) whose UDP destination port is
// the group's, and whose destination address is the bound one unless that
// is unspecified, is redirected to the AF_XDP socket of its receive queue
// in the XSKMAP; a queue without a socket, and every other frame (ARP,
// ICMP, neighbour discovery, other ports, fragments, options), goes on to
// the kernel (XDP_PASS). Packet bytes are loaded in host (little-endian)
// order, so the constants compared against are byte-swapped.
const (
	xdpPass = 2
	// xdp_md fields.
	xdpData     = 0
	xdpDataEnd  = 4
	xdpRxQueue  = 16
	ethTypeOff  = 12
	ipv4Off     = ethHeaderLen
	ipv6Off     = ethHeaderLen
	udpDstOff4  = ipv4Off + ipv4HeaderLen + 2
	udpDstOff6  = ipv6Off + ipv6HeaderLen + 2
	ethTypeLE4  = 0x0008 // 0x0800 loaded little-endian
	ethTypeLE6  = 0xdd86 // 0x86dd
	fragMaskLE  = 0xff3f // MF and the offset (0x3fff), little-endian
	ipv4VerIHL  = 0x45
	ipv4ProtoAt = ipv4Off + 9
	ipv6NextAt  = ipv6Off + 6
)

// xdpFilter is what the program redirects: the port, the families, and
// the destination address if one was bound.
type xdpFilter struct {
	port     uint16
	v4, v6   bool
	addr     netip.Addr // unspecified: any
	mtu      int        // longer frames go to the kernel
	xskMapFD int
	pre      asm.Instructions // XDP.Prefilter
}

func xdpProgram(f xdpFilter) asm.Instructions {
	le16 := func(v uint16) int32 { return int32(v>>8 | v<<8&0xff00) }
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, xdpData, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, xdpDataEnd, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, ethHeaderLen),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		// Longer than the MTU: a GSO super-packet from a local sender
		// (veth, generic mode), for the kernel to segment.
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, int32(ethHeaderLen+f.mtu)),
		asm.JLT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, ethTypeOff, asm.Half),
	}
	if f.v4 {
		insns = append(insns, asm.JEq.Imm(asm.R5, ethTypeLE4, "ipv4"))
	}
	if f.v6 {
		insns = append(insns, asm.JEq.Imm(asm.R5, ethTypeLE6, "ipv6"))
	}
	insns = append(insns, asm.Ja.Label("pass"))
	if f.v4 {
		insns = append(insns,
			asm.Mov.Reg(asm.R4, asm.R2).WithSymbol("ipv4"),
			asm.Add.Imm(asm.R4, frameHeader4),
			asm.JGT.Reg(asm.R4, asm.R3, "pass"),
			asm.LoadMem(asm.R5, asm.R2, ipv4Off, asm.Byte),
			asm.JNE.Imm(asm.R5, ipv4VerIHL, "pass"),
			asm.LoadMem(asm.R5, asm.R2, ipv4ProtoAt, asm.Byte),
			asm.JNE.Imm(asm.R5, protoUDP, "pass"),
			asm.LoadMem(asm.R5, asm.R2, ipv4Off+6, asm.Half),
			asm.And.Imm(asm.R5, fragMaskLE),
			asm.JNE.Imm(asm.R5, 0, "pass"),
		)
		if f.addr.Is4() && !f.addr.IsUnspecified() {
			a := f.addr.As4()
			insns = append(insns,
				asm.LoadMem(asm.R5, asm.R2, ipv4Off+16, asm.Word),
				asm.LoadImm(asm.R4, int64(binary.LittleEndian.Uint32(a[:])), asm.DWord),
				asm.JNE.Reg(asm.R5, asm.R4, "pass"),
			)
		}
		insns = append(insns,
			asm.LoadMem(asm.R5, asm.R2, udpDstOff4, asm.Half),
			asm.JNE.Imm(asm.R5, le16(f.port), "pass"),
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, ipv4Off+ipv4HeaderLen),
			asm.Mov.Imm(asm.R5, 4),
			asm.Ja.Label("nc_prefilter"),
		)
	}
	if f.v6 {
		insns = append(insns,
			asm.Mov.Reg(asm.R4, asm.R2).WithSymbol("ipv6"),
			asm.Add.Imm(asm.R4, frameHeader6),
			asm.JGT.Reg(asm.R4, asm.R3, "pass"),
			asm.LoadMem(asm.R5, asm.R2, ipv6NextAt, asm.Byte),
			asm.JNE.Imm(asm.R5, protoUDP, "pass"),
		)
		if f.addr.Is6() && !f.addr.IsUnspecified() {
			a := f.addr.As16()
			for i := 0; i < 16; i += 4 {
				insns = append(insns,
					asm.LoadMem(asm.R5, asm.R2, int16(ipv6Off+24+i), asm.Word),
					asm.LoadImm(asm.R4, int64(binary.LittleEndian.Uint32(a[i:])), asm.DWord),
					asm.JNE.Reg(asm.R5, asm.R4, "pass"),
				)
			}
		}
		insns = append(insns,
			asm.LoadMem(asm.R5, asm.R2, udpDstOff6, asm.Half),
			asm.JNE.Imm(asm.R5, le16(f.port), "pass"),
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, ipv6Off+ipv6HeaderLen),
			asm.Mov.Imm(asm.R5, 6),
		)
	}
	// The prefilter (or, without one, the redirect) follows.
	insns = append(insns, asm.Mov.Reg(asm.R5, asm.R5).WithSymbol("nc_prefilter"))
	insns = append(insns, f.pre...)
	return append(insns,
		asm.LoadMem(asm.R2, asm.R6, xdpRxQueue, asm.Word).WithSymbol("redirect"),
		asm.LoadMapPtr(asm.R1, f.xskMapFD),
		asm.Mov.Imm(asm.R3, xdpPass), // no socket on the queue: to the kernel
		asm.FnRedirectMap.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("pass"),
		asm.Return(),
	)
}

// xdpAttachment is a group's program, attached to its interface by a
// bpf_link, and its XSKMAP. The link's descriptor is the attachment: when
// the last one closes, on Close or when the process dies however it dies,
// the kernel detaches the program. The conns of a group share it; the
// last to close releases it.
type xdpAttachment struct {
	mu    sync.Mutex
	refs  int
	prog  *ebpf.Program
	xsks  *ebpf.Map
	link  link.Link
	mode  XDPMode // XDPNative or XDPGeneric
	iface *net.Interface
}

// attachXDP loads the program for f on iface with a map of queues slots
// and attaches it in mode (XDPTry: native, then generic).
func attachXDP(iface *net.Interface, f xdpFilter, queues int, mode XDPMode) (*xdpAttachment, error) {
	a := &xdpAttachment{iface: iface}
	fail := func(what string, err error) (*xdpAttachment, error) {
		a.release()
		hint := ""
		if errors.Is(err, unix.EPERM) {
			hint = " (needs CAP_NET_ADMIN and CAP_BPF, or root)"
		}
		return nil, fmt.Errorf("batchio: XDP on %s: %s: %w: %w%s", iface.Name, what, ErrXDPUnsupported, err, hint)
	}
	var err error
	if a.xsks, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nc_xsks", Type: ebpf.XSKMap,
		KeySize: 4, ValueSize: 4, MaxEntries: uint32(queues)}); err != nil {
		return fail("XSKMAP", err)
	}
	f.xskMapFD = a.xsks.FD()
	if a.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "nc_xdp", Type: ebpf.XDP, License: "BSD", Instructions: xdpProgram(f),
	}); err != nil {
		return fail("load program", err)
	}
	try := func(m XDPMode) error {
		flags := link.XDPDriverMode
		if m == XDPGeneric {
			flags = link.XDPGenericMode
		}
		l, err := link.AttachXDP(link.XDPOptions{Program: a.prog, Interface: iface.Index, Flags: flags})
		if err != nil {
			return err
		}
		a.link, a.mode = l, m
		return nil
	}
	switch mode {
	case XDPTry:
		if err = try(XDPNative); err != nil {
			if err2 := try(XDPGeneric); err2 != nil {
				return fail("attach (native, then generic)", fmt.Errorf("%w; generic: %w", err, err2))
			}
		}
	default:
		if err = try(mode); err != nil {
			what := "attach in " + mode.String() + " mode"
			if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) {
				what += " (the driver lacks it?)"
			}
			if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST) {
				if id, _ := linkXDPProg(iface.Index); id != 0 {
					what += fmt.Sprintf(" (XDP program %d is attached already: another server on the interface?)", id)
				} else {
					what += " (another XDP program is attached)"
				}
			}
			return fail(what, err)
		}
	}
	a.refs = 1
	return a, nil
}

func (a *xdpAttachment) hold() {
	a.mu.Lock()
	a.refs++
	a.mu.Unlock()
}

// release drops a reference; the last one detaches the program.
func (a *xdpAttachment) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.refs > 1 {
		a.refs--
		return
	}
	a.refs = 0
	if a.link != nil {
		a.link.Close()
		a.link = nil
	}
	if a.prog != nil {
		a.prog.Close()
		a.prog = nil
	}
	if a.xsks != nil {
		a.xsks.Close()
		a.xsks = nil
	}
}

// attachedXDP reports the id of the XDP program attached to the
// interface (0: none), read from the kernel's view of the link, for
// checks and tests.
func attachedXDP(ifname string) (uint32, error) {
	b, err := os.ReadFile(filepath.Join("/sys/class/net", ifname, "ifindex"))
	if err != nil {
		return 0, err
	}
	var idx int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &idx); err != nil {
		return 0, err
	}
	return linkXDPProg(idx)
}
