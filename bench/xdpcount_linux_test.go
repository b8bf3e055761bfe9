//go:build linux

package bench

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/netcode-go/netcode/codec"
)

// testKernelCounter loads the counter's prefilter for n clients on
// 198.19.0.0/16 inside a stand-in for batchio's program (R2-R6 as it sets
// them for IPv4; "redirect" returns XDP_PASS), for BPF_PROG_TEST_RUN.
func testKernelCounter(t *testing.T, n int, bare, game bool) (*kernelCounter, *ebpf.Program) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to load an XDP program")
	}
	net, err := newMuxNet(netip.MustParsePrefix("198.19.0.0/16"))
	if err != nil {
		t.Fatal(err)
	}
	kc, pre, err := newKernelCounter(n, net, 300, bare, game)
	if err != nil {
		t.Skipf("BPF maps unavailable: %v", err)
	}
	t.Cleanup(func() { kc.close() })
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 42),
		asm.JGT.Reg(asm.R4, asm.R3, "redirect"),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 34),
		asm.Mov.Imm(asm.R5, 4),
	}
	insns = append(insns, pre...)
	insns = append(insns, asm.Mov.Imm(asm.R0, 2).WithSymbol("redirect"), asm.Return())
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "BSD", Instructions: insns})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(func() { prog.Close() })
	return kc, prog
}

// frameTo is an Ethernet, IPv4 and UDP frame to dst carrying payload
// (checksums left zero: the counter does not look at them).
func frameTo(dst netip.Addr, payload []byte) []byte {
	f := make([]byte, 42+len(payload))
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	f[14] = 0x45
	binary.BigEndian.PutUint16(f[16:], uint16(20+8+len(payload)))
	f[23] = 17
	a := dst.As4()
	copy(f[30:], a[:])
	binary.BigEndian.PutUint16(f[38:], uint16(8+len(payload)))
	copy(f[42:], payload)
	return f
}

const (
	verdictDrop     = 1
	verdictRedirect = 2 // the stand-in's "redirect"
)

func runFrame(t *testing.T, prog *ebpf.Program, f []byte) uint32 {
	t.Helper()
	ret, err := prog.Run(&ebpf.RunOptions{Data: f})
	if errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("BPF_PROG_TEST_RUN: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ret
}

// TestKernelCounter runs the counter's program on hand-made frames: it
// counts a counting client's snapshots placed in the window by the
// edges it learnt, with SeqTracker's classes, drops them, and passes on
// to the socket what the client must open or cannot be placed.
func TestKernelCounter(t *testing.T) {
	kc, prog := testKernelCounter(t, 4, false, true)
	key := testPacketKey(t)
	snap := func(seq uint64, size int) []byte {
		b := make([]byte, codec.MaxPacketBytes)
		n, err := codec.WritePayloadPacket(b, seq, make([]byte, size), key)
		if err != nil {
			t.Fatal(err)
		}
		return b[:n]
	}
	c1 := netip.MustParseAddr("198.19.0.2") // muxNet index 1
	loadStart := time.Now()
	s := int64(time.Second)
	kc.beginWindow(loadStart, -s, 10*s) // begun, ends in 10 s
	win := &seqEdges{start: -s}
	steps := []struct {
		name  string
		prep  func()
		frame []byte
		want  uint32
		got   kcCounts // client 1's counts after
	}{
		{"not counting", nil, frameTo(c1, snap(10, 300)), verdictRedirect, kcCounts{}},
		{"its turn to get one", func() { kc.setCounting(1, true) }, frameTo(c1, snap(10, 300)), verdictRedirect, kcCounts{}},
		{"no edge known", nil, frameTo(c1, snap(10, 300)), verdictRedirect, kcCounts{}},
		{"sent before the window's first", func() { win.from, win.haveFrom = 10, true; kc.learn(1, win) }, frameTo(c1, snap(9, 300)), verdictDrop, kcCounts{}},
		{"the first", nil, frameTo(c1, snap(10, 300)), verdictDrop, kcCounts{recv: 1}},
		{"a duplicate", nil, frameTo(c1, snap(10, 300)), verdictDrop, kcCounts{recv: 1, dup: 1}},
		{"after a gap", nil, frameTo(c1, snap(12, 300)), verdictDrop, kcCounts{recv: 2, dup: 1}},
		{"reordered", nil, frameTo(c1, snap(11, 300)), verdictDrop, kcCounts{recv: 3, dup: 1, reord: 1}},
		{"far ahead", nil, frameTo(c1, snap(200, 300)), verdictDrop, kcCounts{recv: 4, dup: 1, reord: 1}},
		{"too old", nil, frameTo(c1, snap(100, 300)), verdictDrop, kcCounts{recv: 5, dup: 1, reord: 1, old: 1}},
		{"a 2-byte sequence", nil, frameTo(c1, snap(0x1234, 300)), verdictDrop, kcCounts{recv: 6, dup: 1, reord: 1, old: 1}},
		{"another size", nil, frameTo(c1, snap(0x1235, 64)), verdictRedirect, kcCounts{recv: 6, dup: 1, reord: 1, old: 1}},
		{"another client off the net", nil, frameTo(netip.MustParseAddr("198.20.0.2"), snap(0x1235, 300)), verdictRedirect, kcCounts{recv: 6, dup: 1, reord: 1, old: 1}},
		{"a client past the table", nil, frameTo(netip.MustParseAddr("198.19.0.6"), snap(0x1235, 300)), verdictRedirect, kcCounts{recv: 6, dup: 1, reord: 1, old: 1}},
	}
	drops := uint64(0)
	for _, st := range steps {
		if st.prep != nil {
			st.prep()
		}
		if v := runFrame(t, prog, st.frame); v != st.want {
			t.Fatalf("%s: verdict %d; want %d", st.name, v, st.want)
		}
		if st.want == verdictDrop {
			drops++
		}
		if c := kc.since(1); c != st.got {
			t.Fatalf("%s: counts %+v; want %+v", st.name, c, st.got)
		}
	}
	if kc.taken() != drops {
		t.Fatalf("the program took %d snapshots; want the %d it dropped", kc.taken(), drops)
	}
	// A new session numbers its packets from 0 again: its first is in
	// order, not too old.
	kc.setCounting(1, false)
	kc.newSession(1)
	kc.setCounting(1, true)
	if v := runFrame(t, prog, frameTo(c1, snap(1, 300))); v != verdictRedirect {
		t.Fatalf("new session, no edge known: verdict %d; want the socket", v)
	}
	kc.learn(1, &seqEdges{start: -s, from: 1, haveFrom: true})
	before := kc.since(1)
	if v := runFrame(t, prog, frameTo(c1, snap(1, 300))); v != verdictDrop {
		t.Fatalf("new session: verdict %d; want a drop", v)
	}
	if c := kc.since(1); c.recv != before.recv+1 || c.old != before.old {
		t.Fatalf("new session's first: counts %+v after %+v; want one more received, none too old", c, before)
	}

	// A window that has ended: its own edges, and the end's.
	kc.beginWindow(loadStart, -3*s, -s/2)
	if c := kc.since(1); c != (kcCounts{}) {
		t.Fatalf("a new window starts from %+v", c)
	}
	if v := runFrame(t, prog, frameTo(c1, snap(305, 300))); v != verdictRedirect {
		t.Fatalf("new window, the old edges: verdict %d; want the socket", v)
	}
	end := &seqEdges{start: -3 * s, from: 300, haveFrom: true}
	kc.learn(1, end)
	if v := runFrame(t, prog, frameTo(c1, snap(305, 300))); v != verdictRedirect {
		t.Fatalf("after the end, its edge not known: verdict %d; want the socket", v)
	}
	end.to, end.haveTo = 310, true
	kc.learn(1, end)
	for _, tt := range []struct {
		seq  uint64
		recv uint64
	}{{305, 1}, {310, 1}, {299, 1}, {309, 2}} {
		if v := runFrame(t, prog, frameTo(c1, snap(tt.seq, 300))); v != verdictDrop {
			t.Fatalf("after the end, sequence %d: verdict %d; want a drop", tt.seq, v)
		}
		if c := kc.since(1); c.recv != tt.recv {
			t.Fatalf("after the end, sequence %d: %d counted; want %d", tt.seq, c.recv, tt.recv)
		}
	}
	// Past lateLimit, and before a window's start: dropped, not counted.
	kc.beginWindow(loadStart, -5*s, -3*s)
	kc.learn(1, &seqEdges{start: -5 * s, from: 0, haveFrom: true, to: 1000, haveTo: true})
	kc.beginWindow(loadStart, 5*s, 7*s)
	for _, at := range []string{"late", "early"} {
		if v := runFrame(t, prog, frameTo(c1, snap(400, 300))); v != verdictDrop || kc.since(1).recv != 0 {
			t.Fatalf("%s: verdict %d, %d counted; want a drop, none", at, v, kc.since(1).recv)
		}
		kc.beginWindow(loadStart, -5*s, -3*s)
	}
}

// TestKernelCounterBare: a protocol-free snapshot is counted by its
// stamp sequence and its size alone.
func TestKernelCounterBare(t *testing.T) {
	kc, prog := testKernelCounter(t, 4, true, true)
	snap := func(seq uint64, size int) []byte {
		p := make([]byte, size)
		PutSnapshotStamp(p, 0, seq)
		return p
	}
	c2 := netip.MustParseAddr("198.19.0.3")
	loadStart := time.Now()
	kc.beginWindow(loadStart, -int64(time.Second), 0)
	kc.setCounting(2, true)
	if v := runFrame(t, prog, frameTo(c2, snap(5, 300))); v != verdictRedirect {
		t.Fatalf("its turn to get one: verdict %d", v)
	}
	kc.learn(2, &seqEdges{start: -int64(time.Second), from: 5, haveFrom: true})
	for _, tt := range []struct {
		seq  uint64
		size int
		want uint32
		recv uint64
	}{{5, 300, verdictDrop, 1}, {6, 300, verdictDrop, 2}, {7, 64, verdictRedirect, 2}, {4, 300, verdictDrop, 2}} {
		if v := runFrame(t, prog, frameTo(c2, snap(tt.seq, tt.size))); v != tt.want || kc.since(2).recv != tt.recv {
			t.Fatalf("sequence %d, %d bytes: verdict %d, %d counted; want %d, %d", tt.seq, tt.size, v, kc.since(2).recv, tt.want, tt.recv)
		}
	}
}

// TestKernelCounterEcho: an echo reply is counted whenever it comes, a
// window or none; a window's start only sets the base its counts start
// from.
func TestKernelCounterEcho(t *testing.T) {
	kc, prog := testKernelCounter(t, 4, false, false)
	key := testPacketKey(t)
	echo := func(seq uint64) []byte {
		b := make([]byte, codec.MaxPacketBytes)
		n, err := codec.WritePayloadPacket(b, seq, make([]byte, 300), key)
		if err != nil {
			t.Fatal(err)
		}
		return b[:n]
	}
	c0 := netip.MustParseAddr("198.19.0.1")
	kc.setCounting(0, true)
	if v := runFrame(t, prog, frameTo(c0, echo(1))); v != verdictRedirect {
		t.Fatalf("its turn to get one: verdict %d", v)
	}
	for _, tt := range []struct {
		seq uint64
		got kcCounts
	}{{2, kcCounts{recv: 1}}, {2, kcCounts{recv: 1, dup: 1}}, {4, kcCounts{recv: 2, dup: 1}}, {3, kcCounts{recv: 3, dup: 1, reord: 1}}} {
		if v := runFrame(t, prog, frameTo(c0, echo(tt.seq))); v != verdictDrop || kc.since(0) != tt.got {
			t.Fatalf("sequence %d, no window: verdict %d, counts %+v; want a drop, %+v", tt.seq, v, kc.since(0), tt.got)
		}
	}
	kc.beginWindow(time.Now(), int64(time.Second), 0)
	if v := runFrame(t, prog, frameTo(c0, echo(5))); v != verdictDrop || kc.since(0) != (kcCounts{recv: 1}) || kc.sinceAll() != (kcCounts{recv: 1}) {
		t.Fatalf("before a window's start: verdict %d, counts %+v; want a drop, one counted since the window's start", v, kc.since(0))
	}
}
