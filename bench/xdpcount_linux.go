//go:build linux

package bench

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/netcode-go/netcode/codec"
)

// A kernelCounter counts replies in the load's XDP program
// (batchio.XDP.Prefilter) for the clients that do not open them
// (LoadConfig.SampleEvery), and drops them there: the load's receive
// ring, copy and process then see only the replies the clients open. It
// places a game snapshot as account does, by its arrival time and its
// packet sequence against the edges the client learnt (seqEdges); an
// echo reply it counts whenever it comes, as account does. It counts
// with a 64-sequence window for duplicates and reordering (SeqTracker's
// 1,024: an arrival 64 to 1,024 sequences late counts as too old here,
// not as reordered or as a duplicate; and the process, which keeps its
// own window, counts again a duplicate of one the kernel counted if it
// comes on the client's full-path turn). It hands the client's socket
// whatever it cannot place yet, any other packet, and one snapshot per
// fullPathEvery per client (less its stagger), so sessions stay alive.
//
// Its state is two BPF arrays mapped into the process: one entry per
// client (kc* offsets) and one for the window (ctl* offsets), read and
// written with atomics on both sides. The kernel writes a client's
// counters, sequence window and last pass, the load the rest (and clears
// the sequence window for a new session, while the client is not
// counting).
type kernelCounter struct {
	clients, control *ebpf.Map
	mem, ctl         []byte
	n                int
	base             []kcCounts // per client, at the window's start
}

// kcCounts are one client's counters in the kernel.
type kcCounts struct{ recv, dup, reord, old uint64 }

// Offsets in a client's entry (kcEntry bytes, 8-byte fields).
const (
	kcMode     = 0  // 1: count this client's snapshots (not sampled, connected)
	kcEdgeWin  = 8  // the window its edges belong to (ctlWin)
	kcFrom     = 16 // seqEdges.from
	kcTo       = 24 // seqEdges.to
	kcFlags    = 32 // 1: from known, 2: to known
	kcLastPass = 40 // when a snapshot last went to the socket (ns, monotonic), less the stagger
	kcStagger  = 48 // fullPathStagger
	kcNext     = 56 // the window: highest sequence counted + 1
	kcBits     = 64 // bit i: sequence next-1-i counted
	kcRecv     = 72
	kcDup      = 80
	kcReord    = 88
	kcOld      = 96
	kcEntry    = 128

	ctlWin       = 0  // the window (Load.winStart + 1), 0: none
	ctlStart     = 8  // its start, ns monotonic
	ctlEnd       = 16 // its end, 0: open
	ctlLate      = 24 // end + lateLimit
	ctlFullEvery = 32 // fullPathEvery in ns
	ctlDropped   = 40 // snapshots the program took, counted or not
	ctlEntry     = 64

	xdpDrop = 1
)

// newKernelCounter makes the maps for n clients on net, whose replies
// are replySize bytes (bare: protocol-free ones), game snapshots or
// echoes, and returns the prefilter that uses them.
func newKernelCounter(n int, net muxNet, replySize int, bare, game bool) (*kernelCounter, asm.Instructions, error) {
	k := &kernelCounter{n: n, base: make([]kcCounts, n)}
	var err error
	if k.clients, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nc_load_clients", Type: ebpf.Array, KeySize: 4,
		ValueSize: kcEntry, MaxEntries: uint32(n), Flags: unix.BPF_F_MMAPABLE}); err != nil {
		return nil, nil, fmt.Errorf("bench: the load's XDP counters: %w", err)
	}
	if k.control, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nc_load_window", Type: ebpf.Array, KeySize: 4,
		ValueSize: ctlEntry, MaxEntries: 1, Flags: unix.BPF_F_MMAPABLE}); err != nil {
		k.close()
		return nil, nil, fmt.Errorf("bench: the load's XDP counters: %w", err)
	}
	if k.mem, err = mapArray(k.clients, n*kcEntry); err != nil {
		k.close()
		return nil, nil, err
	}
	if k.ctl, err = mapArray(k.control, ctlEntry); err != nil {
		k.close()
		return nil, nil, err
	}
	for j := range n {
		atomic.StoreUint64(k.word(j, kcStagger), uint64(fullPathStagger(j)))
	}
	atomic.StoreUint64(k.ctlWord(ctlFullEvery), uint64(fullPathEvery))
	return k, kernelCountProgram(k.clients.FD(), k.control.FD(), n, net, replySize, bare, game), nil
}

func mapArray(m *ebpf.Map, size int) ([]byte, error) {
	page := unix.Getpagesize()
	b, err := unix.Mmap(m.FD(), 0, (size+page-1)/page*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("bench: mapping the load's XDP counters: %w", err)
	}
	return b, nil
}

// monotonicNow reads CLOCK_MONOTONIC, bpf_ktime_get_ns's clock.
func monotonicNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

func (k *kernelCounter) close() error {
	var errs []error
	for _, b := range [][]byte{k.mem, k.ctl} {
		if b != nil {
			errs = append(errs, unix.Munmap(b))
		}
	}
	k.mem, k.ctl = nil, nil
	for _, m := range []*ebpf.Map{k.clients, k.control} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}

func (k *kernelCounter) word(j, off int) *uint64 {
	return (*uint64)(unsafe.Pointer(&k.mem[j*kcEntry+off]))
}

func (k *kernelCounter) ctlWord(off int) *uint64 { return (*uint64)(unsafe.Pointer(&k.ctl[off])) }

// setCounting turns the kernel's counting of client j's snapshots on or
// off.
func (k *kernelCounter) setCounting(j int, on bool) {
	v := uint64(0)
	if on {
		v = 1
	}
	atomic.StoreUint64(k.word(j, kcMode), v)
}

// newSession forgets client j's edges and sequence window: a new
// session numbers its packets from 0 again. The client must not be
// counting (setCounting off): its entry is then the load's alone.
func (k *kernelCounter) newSession(j int) {
	for _, off := range []int{kcEdgeWin, kcFlags, kcNext, kcBits} {
		atomic.StoreUint64(k.word(j, off), 0)
	}
}

// learn gives the kernel client j's edges; the window's last, so that the
// kernel never pairs one window's edges with another.
func (k *kernelCounter) learn(j int, e *seqEdges) {
	flags := uint64(0)
	if e.haveFrom {
		atomic.StoreUint64(k.word(j, kcFrom), e.from)
		flags |= 1
	}
	if e.haveTo {
		atomic.StoreUint64(k.word(j, kcTo), e.to)
		flags |= 2
	}
	win := uint64(e.start + 1)
	if atomic.LoadUint64(k.word(j, kcEdgeWin)) != win {
		atomic.StoreUint64(k.word(j, kcEdgeWin), 0)
	}
	atomic.StoreUint64(k.word(j, kcFlags), flags)
	atomic.StoreUint64(k.word(j, kcEdgeWin), win)
}

// beginWindow sets the window [start, end) (ns since the load's start
// at loadStart; end 0: open) and takes the counters' bases.
func (k *kernelCounter) beginWindow(loadStart time.Time, start, end int64) {
	toMono := monotonicNow() - int64(time.Since(loadStart))
	atomic.StoreUint64(k.ctlWord(ctlWin), 0)
	atomic.StoreUint64(k.ctlWord(ctlStart), uint64(toMono+start))
	if end != 0 {
		atomic.StoreUint64(k.ctlWord(ctlEnd), uint64(toMono+end))
		atomic.StoreUint64(k.ctlWord(ctlLate), uint64(toMono+end+int64(lateLimit)))
	} else {
		atomic.StoreUint64(k.ctlWord(ctlEnd), 0)
		atomic.StoreUint64(k.ctlWord(ctlLate), 0)
	}
	atomic.StoreUint64(k.ctlWord(ctlWin), uint64(start+1))
	for j := range k.n {
		k.base[j] = k.counts(j)
	}
}

// taken returns how many snapshots the program took (counted or not).
func (k *kernelCounter) taken() uint64 { return atomic.LoadUint64(k.ctlWord(ctlDropped)) }

func (k *kernelCounter) counts(j int) kcCounts {
	return kcCounts{atomic.LoadUint64(k.word(j, kcRecv)), atomic.LoadUint64(k.word(j, kcDup)),
		atomic.LoadUint64(k.word(j, kcReord)), atomic.LoadUint64(k.word(j, kcOld))}
}

// sinceAll returns every client's counts since the window's start.
func (k *kernelCounter) sinceAll() kcCounts {
	var t kcCounts
	for j := range k.n {
		c := k.since(j)
		t.recv += c.recv
		t.dup += c.dup
		t.reord += c.reord
		t.old += c.old
	}
	return t
}

// since returns client j's counts since the window's start.
func (k *kernelCounter) since(j int) kcCounts {
	c, b := k.counts(j), k.base[j]
	return kcCounts{c.recv - b.recv, c.dup - b.dup, c.reord - b.reord, c.old - b.old}
}

// kernelCountProgram is the prefilter (batchio.XDP.Prefilter): R2 the
// frame, R4 its UDP header, R5 the IP version, R6 the xdp_md.
func kernelCountProgram(clientsFD, controlFD, n int, net muxNet, replySize int, bare, game bool) asm.Instructions {
	const (
		udpLen = 8
		// A netcode payload packet: prefix, sequence (1-8 bytes), the
		// payload, the MAC.
		overhead = udpLen + 1 + codec.MACBytes
	)
	next := "kc_count" // after the session's turn
	if game {
		next = "kc_place"
	}
	insns := asm.Instructions{
		asm.JNE.Imm(asm.R5, 4, "redirect"),
		// The prefix and 8 sequence bytes, or the bare stamp's 16.
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Add.Imm(asm.R1, udpLen+StampBytes),
		asm.JGT.Reg(asm.R1, asm.R3, "redirect"),
		// The client: muxNet.index of the destination address.
		asm.LoadMem(asm.R7, asm.R2, 14+16, asm.Word), // little-endian: b0 | b1<<8 | b2<<16 | b3<<24
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.And.Imm(asm.R1, 0xff),
		asm.JNE.Imm(asm.R1, int32(net.b0), "redirect"),
		asm.Mov.Reg(asm.R9, asm.R7),
		asm.RSh.Imm(asm.R9, 24),
		asm.JEq.Imm(asm.R9, 0, "redirect"),
		asm.JEq.Imm(asm.R9, 255, "redirect"),
		asm.Mov.Reg(asm.R8, asm.R7),
		asm.RSh.Imm(asm.R8, 16),
		asm.And.Imm(asm.R8, 0xff),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.RSh.Imm(asm.R1, 8),
		asm.And.Imm(asm.R1, 0xff),
	}
	if net.wide {
		insns = append(insns,
			asm.JEq.Imm(asm.R1, 0, "redirect"),
			asm.Sub.Imm(asm.R1, 1),
			asm.LSh.Imm(asm.R1, 8),
			asm.Or.Reg(asm.R8, asm.R1),
		)
	} else {
		insns = append(insns, asm.JNE.Imm(asm.R1, int32(net.b1), "redirect"))
	}
	insns = append(insns,
		asm.Mul.Imm(asm.R8, muxHostsPerSubnet),
		asm.Add.Reg(asm.R8, asm.R9),
		asm.Sub.Imm(asm.R8, 1),
		asm.JGE.Imm(asm.R8, int32(n), "redirect"),
		asm.StoreMem(asm.RFP, -4, asm.R8, asm.Word),
		// The UDP length, big-endian.
		asm.LoadMem(asm.R1, asm.R4, 4, asm.Byte),
		asm.LSh.Imm(asm.R1, 8),
		asm.LoadMem(asm.R9, asm.R4, 5, asm.Byte),
		asm.Or.Reg(asm.R1, asm.R9),
	)
	// R8: the reply's sequence (a bare reply's stamp sequence).
	if bare {
		insns = append(insns,
			asm.JNE.Imm(asm.R1, int32(udpLen+replySize), "redirect"),
			asm.LoadMem(asm.R8, asm.R4, udpLen+8, asm.DWord),
		)
	} else {
		insns = append(insns,
			asm.LoadMem(asm.R9, asm.R4, udpLen, asm.Byte),
			asm.Mov.Reg(asm.R7, asm.R9),
			asm.And.Imm(asm.R7, 0x0f),
			asm.JNE.Imm(asm.R7, int32(codec.ConnectionPayload), "redirect"),
			asm.RSh.Imm(asm.R9, 4),
			asm.JEq.Imm(asm.R9, 0, "redirect"),
			asm.JGT.Imm(asm.R9, 8, "redirect"),
			asm.Sub.Imm(asm.R1, int32(overhead+replySize)),
			asm.JNE.Reg(asm.R1, asm.R9, "redirect"),
			asm.Mov.Imm(asm.R8, 0),
		)
		for i := range 8 {
			if i > 0 {
				insns = append(insns, asm.JLE.Imm(asm.R9, int32(i), "kc_seq"))
			}
			insns = append(insns,
				asm.LoadMem(asm.R1, asm.R4, int16(udpLen+1+i), asm.Byte),
				asm.LSh.Imm(asm.R1, int32(8*i)),
				asm.Or.Reg(asm.R8, asm.R1),
			)
		}
	}
	insns = append(insns,
		// R7: the client's entry.
		asm.LoadMapPtr(asm.R1, clientsFD).WithSymbol("kc_seq"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "redirect"),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.LoadMem(asm.R1, asm.R7, kcMode, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "redirect"),
		// R9: the window.
		asm.StoreImm(asm.RFP, -8, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, controlFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "redirect"),
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.FnKtimeGetNs.Call(), // R0: now
		// The client's turn to get one: its session must stay alive.
		asm.LoadMem(asm.R1, asm.R7, kcLastPass, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R0),
		asm.Sub.Reg(asm.R2, asm.R1),
		asm.LoadMem(asm.R3, asm.R9, ctlFullEvery, asm.DWord),
		asm.JLT.Reg(asm.R2, asm.R3, next),
		asm.LoadMem(asm.R1, asm.R7, kcStagger, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R0),
		asm.Sub.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.R7, kcLastPass, asm.R2, asm.DWord),
		asm.Ja.Label("redirect"),
	)
	if game {
		insns = append(insns, placeByEdgesProgram()...)
	}
	// An echo counts whenever it comes (the window's totals start from
	// the bases taken at its start).
	return append(insns, countProgram()...)
}

// placeByEdgesProgram places a snapshot as Load.placeByEdges does, from
// "kc_place": R0 now, R7 the client's entry, R8 the sequence, R9 the
// window's entry. It goes on to "kc_count", or to "kc_drop" or "redirect".
func placeByEdgesProgram() asm.Instructions {
	return asm.Instructions{
		// R1 the window, R3 its end.
		asm.LoadMem(asm.R1, asm.R9, ctlWin, asm.DWord).WithSymbol("kc_place"),
		asm.JEq.Imm(asm.R1, 0, "kc_drop"),
		asm.LoadMem(asm.R2, asm.R9, ctlStart, asm.DWord),
		asm.JLT.Reg(asm.R0, asm.R2, "kc_drop"),
		asm.LoadMem(asm.R3, asm.R9, ctlEnd, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, "kc_edges"),
		asm.LoadMem(asm.R4, asm.R9, ctlLate, asm.DWord),
		asm.JGE.Reg(asm.R0, asm.R4, "kc_drop"),
		asm.LoadMem(asm.R2, asm.R7, kcEdgeWin, asm.DWord).WithSymbol("kc_edges"),
		asm.JNE.Reg(asm.R2, asm.R1, "redirect"),
		asm.LoadMem(asm.R2, asm.R7, kcFlags, asm.DWord),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.And.Imm(asm.R4, 1),
		asm.JEq.Imm(asm.R4, 0, "redirect"),
		asm.LoadMem(asm.R4, asm.R7, kcFrom, asm.DWord),
		asm.JLT.Reg(asm.R8, asm.R4, "kc_drop"),
		asm.JEq.Imm(asm.R3, 0, "kc_count"),
		asm.JLT.Reg(asm.R0, asm.R3, "kc_count"),
		asm.And.Imm(asm.R2, 2),
		asm.JEq.Imm(asm.R2, 0, "redirect"),
		asm.LoadMem(asm.R4, asm.R7, kcTo, asm.DWord),
		asm.JGE.Reg(asm.R8, asm.R4, "kc_drop"),
	}
}

// countProgram counts the sequence in R8 for the client's entry in R7 as
// SeqTracker.Observe does, from "kc_count", and drops the reply
// ("kc_drop", which counts it taken in R9's window entry).
func countProgram() asm.Instructions {
	insns := asm.Instructions{
		// R1 next, R2 the bits.
		asm.LoadMem(asm.R1, asm.R7, kcNext, asm.DWord).WithSymbol("kc_count"),
		asm.LoadMem(asm.R2, asm.R7, kcBits, asm.DWord),
		asm.JLT.Reg(asm.R8, asm.R1, "kc_behind"),
		asm.Mov.Reg(asm.R3, asm.R8),
		asm.Sub.Reg(asm.R3, asm.R1),
		asm.Mov.Imm(asm.R4, 1),
		asm.JGE.Imm(asm.R3, 63, "kc_ahead"),
		asm.Add.Imm(asm.R3, 1),
		asm.LSh.Reg(asm.R2, asm.R3),
		asm.Or.Imm(asm.R2, 1),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.StoreMem(asm.R7, kcBits, asm.R4, asm.DWord).WithSymbol("kc_ahead"),
		asm.Mov.Reg(asm.R3, asm.R8),
		asm.Add.Imm(asm.R3, 1),
		asm.StoreMem(asm.R7, kcNext, asm.R3, asm.DWord),
		asm.Ja.Label("kc_recv"),
		asm.Mov.Reg(asm.R3, asm.R1).WithSymbol("kc_behind"),
		asm.Sub.Imm(asm.R3, 1),
		asm.Sub.Reg(asm.R3, asm.R8),
		asm.JGE.Imm(asm.R3, 64, "kc_old"),
		asm.Mov.Imm(asm.R4, 1),
		asm.LSh.Reg(asm.R4, asm.R3),
		asm.Mov.Reg(asm.R5, asm.R2),
		asm.And.Reg(asm.R5, asm.R4),
		asm.JNE.Imm(asm.R5, 0, "kc_dup"),
		asm.Or.Reg(asm.R2, asm.R4),
		asm.StoreMem(asm.R7, kcBits, asm.R2, asm.DWord),
	}
	insns = append(insns, bump("", asm.R7, kcReord)...)
	insns = append(insns, asm.Ja.Label("kc_recv"))
	insns = append(insns, bump("kc_old", asm.R7, kcOld)...)
	insns = append(insns, asm.Ja.Label("kc_recv"))
	insns = append(insns, bump("kc_dup", asm.R7, kcDup)...)
	insns = append(insns, asm.Ja.Label("kc_drop"))
	insns = append(insns, bump("kc_recv", asm.R7, kcRecv)...)
	insns = append(insns, bump("kc_drop", asm.R9, ctlDropped)...)
	return append(insns, asm.Mov.Imm(asm.R0, xdpDrop), asm.Return())
}

// bump adds 1 to the counter at off in the entry reg points to (with R1);
// sym, if not empty, labels it.
func bump(sym string, reg asm.Register, off int16) asm.Instructions {
	i := asm.Instructions{
		asm.LoadMem(asm.R1, reg, off, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(reg, off, asm.R1, asm.DWord),
	}
	if sym != "" {
		i[0] = i[0].WithSymbol(sym)
	}
	return i
}
