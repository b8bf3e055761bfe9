package batchio

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// XDPMode selects how Listen and ListenGroup move datagrams: through the
// kernel's UDP socket (the default) or through AF_XDP sockets fed by an
// XDP program on an interface (Linux).
type XDPMode int

const (
	// XDPOff is the socket path.
	XDPOff XDPMode = iota
	// XDPNative attaches the program in the driver's receive path and
	// fails where the driver cannot run it there.
	XDPNative
	// XDPGeneric attaches the program after the kernel has built its
	// socket buffer (any interface, slower than native).
	XDPGeneric
	// XDPTry attaches natively, else generically, else opens the socket
	// path; XDPStats of the conn (or its absence) says which it got.
	XDPTry
)

func (m XDPMode) String() string {
	switch m {
	case XDPOff:
		return "off"
	case XDPNative:
		return "native"
	case XDPGeneric:
		return "generic"
	case XDPTry:
		return "try"
	}
	return fmt.Sprintf("XDPMode(%d)", int(m))
}

// ParseXDPMode reads a mode by its name: off, native, generic or try.
func ParseXDPMode(s string) (XDPMode, error) {
	for m := XDPOff; m <= XDPTry; m++ {
		if m.String() == s {
			return m, nil
		}
	}
	return XDPOff, fmt.Errorf("batchio: XDP mode %q; want off, native, generic or try", s)
}

// XDP configures the AF_XDP path (Config.XDP). With a Mode other than
// XDPOff, Listen and ListenGroup attach an XDP program to Interface that
// hands the UDP datagrams to the listen port (IPv4 without options and
// IPv6 without extension headers, not fragments) to one AF_XDP socket per
// conn, conn i serving receive queue i; everything else reaches the
// kernel as before. Each conn also keeps an ordinary UDP socket on the
// same port, which owns the port for the kernel, receives what the
// program passes on, and sends to peers whose link-layer address is not
// known yet.
//
// Limits:
//   - One group per interface: the program is the interface's only XDP
//     program, so bind one address (the unspecified one serves IPv4 and
//     IPv6 on the ring; its kernel socket and fallback is the bound
//     family's only). A second Listen on the interface fails (EBUSY).
//   - At most one conn per receive queue (a veth pair has one unless
//     made with numrxqueues); queues without a conn go to the kernel.
//   - Link-layer addresses come from the peers' own frames (a reply goes
//     back the way its request came, through a router if the peer is off
//     link) and from the neighbour table; a peer in neither is sent to
//     through the kernel socket, which resolves it for the next time. A
//     forged source can steer replies for that source to another station
//     on the link, as forged ARP can on any link.
//   - Replies leave from the bound address, or the interface's first
//     address of the family; with Config.PacketInfo, from Message.Local
//     when it is set (a read sets it to the datagram's destination), as
//     on a socket, except that the address is not checked to be the
//     host's: the frame is built with it.
//   - Datagrams larger than the MTU allows go through the kernel socket
//     (which may fragment); fragments, IPv4 options and IPv6 extension
//     headers are the kernel's to receive.
//   - In generic mode a local sender's UDP GSO send (veth) reaches the
//     program as one frame; if it fits the MTU it is taken as one
//     datagram. Use native mode on veth, or peers without GSO.
//   - On veth, AF_XDP runs in copy mode (no zero-copy), and the frames
//     from a veth peer carry a pending checksum offload, taken as
//     XDPStats.PartialChecksum.
//   - WaitRead parks on Go's netpoller, as a socket's does by default
//     (BlockingWait is ignored).
//   - No Shedder and no SourceLimit: their socket filters never see the
//     ring's datagrams. A SourceLimit that is not Optional is an error
//     (with XDPTry, the socket path is opened instead).
type XDP struct {
	Mode XDPMode
	// Interface is the name of the interface to attach to (required
	// unless Mode is XDPOff).
	Interface string
	// Frames is the number of UMEM frames of each socket, half for
	// receiving and half for sending (default 16384, a power of two from
	// 64 to 65536). Each is XDPFrameSize bytes: the default takes 32 MiB
	// per socket, locked in memory. The receive half is all a reader
	// that falls behind (descheduled, or busy with a game tick) has
	// before the kernel drops (XDPStats.RxFillEmpty); the send half is
	// all a burst of writes has before the peer's side of the link has
	// taken them (XDPStats.NoFrame).
	Frames int
	// Prefilter, if set, runs in the program on each datagram it would
	// hand to a socket, before it does. It starts with R6 the xdp_md,
	// R2 and R3 the frame's start and end, R4 its UDP header (bounds
	// checked: the header is in the frame) and R5 the IP version (4 or
	// 6); it may use every register but R6 (and R10, the stack), and
	// ends by returning a verdict (XDP_DROP: 1) or by jumping to the label
	// "redirect", which hands the datagram on as if there were no
	// prefilter. Its own labels must not start with "nc_". It is how a
	// load generator counts the replies it would only count anyway in the
	// kernel (bench); a program that fails the verifier fails Listen.
	Prefilter asm.Instructions
}

// XDPFrameSize is the size of one UMEM frame: a datagram up to the MTU of
// 1,500 fits, with the kernel's headroom.
const XDPFrameSize = 2048

// defaultXDPFrames gives a socket 8,192 receive frames, near the
// default 4 MiB socket buffer's hold (about 10,000 small datagrams: the
// kernel doubles it, and each takes some 830 bytes), so a reader
// stalled for a while loses about as little on the AF_XDP path as on
// the socket path. 2,048, the old default, overflowed in game sweeps on
// a busy machine at 1,000 players.
const defaultXDPFrames = 16384

// ErrXDPUnsupported is wrapped by the errors of an AF_XDP listen that the
// system cannot serve: not Linux, no XDP in the interface's driver for
// the mode asked, no AF_XDP in the kernel, not enough privileges.
var ErrXDPUnsupported = errors.New("AF_XDP unavailable")

func (x *XDP) validate() error {
	if x.Mode < XDPOff || x.Mode > XDPTry {
		return fmt.Errorf("batchio: XDP mode %d; want XDPOff, XDPNative, XDPGeneric or XDPTry", int(x.Mode))
	}
	if x.Mode == XDPOff {
		if len(x.Prefilter) > 0 {
			return errors.New("batchio: XDP Prefilter needs an XDP Mode other than XDPOff")
		}
		return nil
	}
	if x.Interface == "" {
		return errors.New("batchio: XDP needs an Interface name")
	}
	if x.Frames == 0 {
		x.Frames = defaultXDPFrames
	}
	if x.Frames < 64 || x.Frames > 65536 || x.Frames&(x.Frames-1) != 0 {
		return fmt.Errorf("batchio: XDP frames %d; want a power of two from 64 to 65536 (0 means %d)", x.Frames, defaultXDPFrames)
	}
	return nil
}

// XDPStats are an AF_XDP conn's counters beyond Stats.
type XDPStats struct {
	Mode      XDPMode // XDPNative or XDPGeneric: how the program is attached
	ZeroCopy  bool    // the socket is bound in zero-copy mode (else copy)
	Queue     int     // the receive queue the socket serves
	KernelRx  uint64  // datagrams read from the kernel socket (passed on by the program)
	KernelTx  uint64  // datagrams sent by the kernel socket (no link-layer address)
	Malformed uint64  // frames in the receive ring that were not for the port, dropped
	// MalformedBy splits Malformed by reason: short, not IP, bad IP
	// header, fragment, not UDP, bad UDP length, bad UDP checksum, other
	// port.
	MalformedBy [8]uint64
	NoFrame     uint64 // datagrams dropped for want of a free send frame
	// PartialChecksum counts datagrams taken whose UDP checksum was left
	// to offload by a virtual device (see the frame parser).
	PartialChecksum uint64
	// RxDropped is the kernel's count of frames for the socket it
	// dropped: RxRingFull, RxFillEmpty and the rest (a frame too large
	// for a UMEM frame) added up.
	RxDropped   uint64
	RxRingFull  uint64 // dropped for a full receive ring (the reader fell behind)
	RxFillEmpty uint64 // dropped for an empty fill ring (no frame to receive into)
	TxInvalid   uint64 // transmit descriptors the kernel refused
	// TxLeft counts sends that left frames in the transmit ring because
	// the device pushed back (in copy mode); the conn's next read or
	// wait sends them.
	TxLeft uint64
}

// XDPStatsReader is a conn on the AF_XDP path.
type XDPStatsReader interface {
	XDPStats() XDPStats
}
