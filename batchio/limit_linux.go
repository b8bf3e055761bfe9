//go:build linux

package batchio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// The eBPF filter of a socket with a SourceLimit. A socket has one filter
// slot, which SO_ATTACH_FILTER (the classic shedding filter) and
// SO_ATTACH_BPF share: attaching one replaces the other. So the program
// does both jobs, and SetShedding on such a socket writes the shedding
// parameters into its config map instead of attaching a filter.
//
// For each datagram, with R6 the skb (its data starts at the UDP header):
//
//  1. Shedding, if on: a datagram whose first payload byte is the prefix
//     is dropped unless a random u32 is below the threshold (as the
//     classic filter does).
//  2. The limit: the source address and port key an LRU hash holding the
//     source's theoretical arrival time (GCRA, a token bucket in one
//     word): a datagram arriving more than (Burst-1) intervals before it
//     is dropped; otherwise it is kept and the time moves one interval on
//     per started limitUnit bytes. Every netcode packet fits in one unit;
//     a flood of larger junk (9,000 B) is held to the same bytes a
//     second, not the same datagrams, so it cannot fill the queue faster.
//
// Updates of one source's word from two CPUs at once may lose one of them
// (a datagram let through that would have been counted): the receive
// hash keeps one flow on one CPU in practice, and an atomic compare and
// swap would cost every datagram more than the error is worth.
const (
	// Config map value: threshold, prefix, on (u32 each).
	cfgThreshold = 0
	cfgPrefix    = 4
	cfgOn        = 8
	cfgSize      = 12
	// Counter slots of the per-CPU array.
	countLimited = 0
	countShed    = 1
	countSlots   = 2
	// Key: source address (16 bytes; an IPv4 one in the first 4, the rest
	// zero) then port, network order, and 2 bytes of zero padding.
	keySize = 20
	// Stack slots below the frame pointer.
	stKey   = -24 // key, 24 bytes reserved
	stIndex = -32 // u32 map index
	stValue = -40 // u64 new map value
	// limitUnit is the bytes (UDP header and payload) one datagram's
	// share of the rate covers: above the largest netcode packet (1,225
	// B and the header).
	limitUnit = 1280
	// bpfHdrStartNet is BPF_HDR_START_NET for bpf_skb_load_bytes_relative.
	bpfHdrStartNet = 1
)

// sourceLimiter is a socket's loaded program and its maps. mu orders
// the map accesses of any goroutine (SourceDrops, SetShedding) with
// close, so that none uses a descriptor number closed and reused.
type sourceLimiter struct {
	mu       sync.Mutex
	closed   bool
	prog     *ebpf.Program
	cfg      *ebpf.Map
	counts   *ebpf.Map
	sources  *ebpf.Map
	counters countReader
}

// limitProgram assembles the filter for a socket of the family (ipv6)
// with the maps' descriptors.
func limitProgram(ipv6 bool, l SourceLimit, cfgFD, countsFD, sourcesFD int) asm.Instructions {
	interval := int64(1e9 / l.Rate) // 0 above 1e9/s: no limit
	tolerance := int64(l.Burst-1) * interval
	addrOff, addrLen := int64(12), int64(4) // IPv4 source address
	if ipv6 {
		addrOff, addrLen = 8, 16
	}
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),

		// 1. Shedding.
		asm.StoreImm(asm.RFP, stIndex, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, cfgFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stIndex),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "limit"),
		asm.LoadMem(asm.R7, asm.R0, cfgOn, asm.Word),
		asm.JEq.Imm(asm.R7, 0, "limit"),
		asm.LoadMem(asm.R8, asm.R0, cfgThreshold, asm.Word),
		asm.LoadMem(asm.R9, asm.R0, cfgPrefix, asm.Word),
		// A datagram without payload ends the program here with 0:
		// dropped, as the server would drop it.
		asm.LoadAbs(udpHeaderLen, asm.Byte),
		asm.JNE.Reg(asm.R0, asm.R9, "limit"),
		asm.FnGetPrandomU32.Call(),
		asm.JLT.Reg(asm.R0, asm.R8, "limit"),
		asm.Mov.Imm(asm.R1, countShed),
		asm.Ja.Label("count"),

		// 2. The per-source limit.
		asm.Mov.Imm(asm.R1, 0).WithSymbol("limit"),
		asm.StoreMem(asm.RFP, stKey, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, stKey+8, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, stKey+16, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, int32(addrOff)),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, stKey),
		asm.Mov.Imm(asm.R4, int32(addrLen)),
		asm.Mov.Imm(asm.R5, bpfHdrStartNet),
		asm.FnSkbLoadBytesRelative.Call(),
		asm.JNE.Imm(asm.R0, 0, "pass"), // no address: the server decides
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, 0), // UDP source port
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, stKey+16),
		asm.Mov.Imm(asm.R4, 2),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "pass"),
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R7, asm.R0), // now
		// The cost: an interval per started limitUnit bytes.
		asm.LoadMem(asm.R8, asm.R6, 0, asm.Word), // skb->len: UDP header and payload
		asm.Add.Imm(asm.R8, limitUnit-1),
		asm.Div.Imm(asm.R8, limitUnit),
		asm.LoadImm(asm.R3, interval, asm.DWord),
		asm.Mul.Reg(asm.R8, asm.R3),
		asm.LoadMapPtr(asm.R1, sourcesFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "new"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord), // tat
		asm.JGE.Reg(asm.R1, asm.R7, "late"),
		asm.Mov.Reg(asm.R1, asm.R7), // idle: the bucket is full
		asm.Mov.Reg(asm.R2, asm.R1).WithSymbol("late"),
		asm.Sub.Reg(asm.R2, asm.R7),
		asm.LoadImm(asm.R3, tolerance, asm.DWord),
		asm.JGT.Reg(asm.R2, asm.R3, "limited"),
		asm.Add.Reg(asm.R1, asm.R8),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Ja.Label("pass"),

		// A source not seen (or forgotten): its first datagram.
		asm.Add.Reg(asm.R7, asm.R8).WithSymbol("new"),
		asm.StoreMem(asm.RFP, stValue, asm.R7, asm.DWord),
		asm.LoadMapPtr(asm.R1, sourcesFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stKey),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, stValue),
		asm.Mov.Imm(asm.R4, 0), // BPF_ANY
		asm.FnMapUpdateElem.Call(),
		asm.Ja.Label("pass"),

		asm.Mov.Imm(asm.R1, countLimited).WithSymbol("limited"),
		// Count a drop in slot R1 of this CPU's counters.
		asm.StoreMem(asm.RFP, stIndex, asm.R1, asm.Word).WithSymbol("count"),
		asm.LoadMapPtr(asm.R1, countsFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stIndex),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("drop"),
		asm.Return(),

		// Keep the whole datagram.
		asm.LoadMem(asm.R0, asm.R6, 0, asm.Word).WithSymbol("pass"), // skb->len
		asm.Return(),
	}
}

// errNoEBPF wraps every reason the limit could not be attached.
var errNoEBPF = errors.New("eBPF socket filter unavailable")

// attachLimit is attachSourceLimit; tests replace it to see the fallback
// where eBPF does load.
var attachLimit = attachSourceLimit

// attachSourceLimit loads the filter for l and attaches it to fd.
func attachSourceLimit(fd int, ipv6 bool, l SourceLimit) (*sourceLimiter, error) {
	sl := &sourceLimiter{}
	var err error
	fail := func(what string, err error) (*sourceLimiter, error) {
		sl.close()
		hint := ""
		if errors.Is(err, unix.EPERM) {
			hint = " (needs CAP_BPF, or CAP_SYS_ADMIN)"
		}
		return nil, fmt.Errorf("batchio: source limit: %w: %s: %w%s", errNoEBPF, what, err, hint)
	}
	if sl.cfg, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nc_cfg", Type: ebpf.Array,
		KeySize: 4, ValueSize: cfgSize, MaxEntries: 1}); err != nil {
		return fail("config map", err)
	}
	if sl.counts, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nc_drops", Type: ebpf.PerCPUArray,
		KeySize: 4, ValueSize: 8, MaxEntries: countSlots}); err != nil {
		return fail("counter map", err)
	}
	if sl.sources, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nc_sources", Type: ebpf.LRUHash,
		KeySize: keySize, ValueSize: 8, MaxEntries: uint32(l.Entries)}); err != nil {
		return fail("source map", err)
	}
	if sl.prog, err = ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Name: "nc_limit", Type: ebpf.SocketFilter, License: "BSD",
		Instructions: limitProgram(ipv6, l, sl.cfg.FD(), sl.counts.FD(), sl.sources.FD()),
	}, ebpf.ProgramOptions{}); err != nil {
		return fail("load program", err)
	}
	if err := sl.counters.init(sl.counts.FD()); err != nil {
		return fail("counters", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ATTACH_BPF, sl.prog.FD()); err != nil {
		return fail("SO_ATTACH_BPF", err)
	}
	return sl, nil
}

// setShedding writes the shedding parameters the program reads.
func (sl *sourceLimiter) setShedding(prefix byte, keep float64) error {
	var v [cfgSize]byte
	if keep < 1 {
		threshold := uint32(math.Min(math.Max(keep, 0)*(1<<32), math.MaxUint32))
		binary.NativeEndian.PutUint32(v[cfgThreshold:], threshold)
		binary.NativeEndian.PutUint32(v[cfgPrefix:], uint32(prefix))
		binary.NativeEndian.PutUint32(v[cfgOn:], 1)
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.closed {
		return ErrClosed
	}
	if err := sl.cfg.Update(uint32(0), v[:], ebpf.UpdateAny); err != nil {
		return fmt.Errorf("batchio: set shedding (keep %v) in the source-limit filter: %w", keep, err)
	}
	return nil
}

// close releases the program and maps; the socket's reference keeps them
// alive until the socket is closed.
func (sl *sourceLimiter) close() {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.closed = true
	if sl.prog != nil {
		sl.prog.Close()
	}
	for _, m := range []*ebpf.Map{sl.cfg, sl.counts, sl.sources} {
		if m != nil {
			m.Close()
		}
	}
}

// countReader sums a per-CPU counter with a bpf(2) lookup into buffers
// made once: cilium/ebpf's Lookup allocates, and a stats reader must not.
type countReader struct {
	fd   int
	key  uint32
	vals []uint64
	attr struct {
		mapFD uint32
		_     uint32
		key   uint64
		value uint64
		flags uint64
	}
}

func (r *countReader) init(fd int) error {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	r.fd, r.vals = fd, make([]uint64, n)
	return nil
}

// read returns the sum over CPUs of slot key; 0 on error.
func (r *countReader) read(key uint32) uint64 {
	r.key = key
	r.attr.mapFD = uint32(r.fd)
	r.attr.key = uint64(uintptr(unsafe.Pointer(&r.key)))
	r.attr.value = uint64(uintptr(unsafe.Pointer(&r.vals[0])))
	_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_MAP_LOOKUP_ELEM,
		uintptr(unsafe.Pointer(&r.attr)), unsafe.Sizeof(r.attr))
	if errno != 0 {
		return 0
	}
	var sum uint64
	for _, v := range r.vals {
		sum += v
	}
	return sum
}

// SourceDrops returns how many datagrams the per-source limit dropped.
func (c *mmsgConn) SourceDrops() uint64 {
	sl := c.limit
	if sl == nil {
		return 0
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.closed {
		return 0
	}
	return sl.counters.read(countLimited)
}
