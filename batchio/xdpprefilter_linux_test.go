//go:build linux

package batchio

import (
	"errors"
	"net/netip"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// TestXDPPrefilter runs the program with a prefilter on frames with
// BPF_PROG_TEST_RUN: the prefilter sees only datagrams to the port, with
// R4 at their UDP header and R5 their IP version, and what it drops is
// dropped while the rest goes on to the redirect (to the kernel here: no
// socket is on the queue).
func TestXDPPrefilter(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to load an XDP program")
	}
	seen, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 8})
	if err != nil {
		t.Skipf("BPF maps unavailable: %v", err)
	}
	defer seen.Close()
	xsks, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Skipf("XSKMAP unavailable: %v", err)
	}
	defer xsks.Close()
	// Count each datagram in slot R5 (its IP version); drop those whose
	// first payload byte is 0xff.
	pre := asm.Instructions{
		asm.Mov.Reg(asm.R7, asm.R4),
		asm.StoreMem(asm.RFP, -4, asm.R5, asm.Word),
		asm.LoadMapPtr(asm.R1, seen.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "redirect"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R3, asm.R6, xdpDataEnd, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, udpHdrLen+1),
		asm.JGT.Reg(asm.R1, asm.R3, "redirect"),
		asm.LoadMem(asm.R1, asm.R7, udpHdrLen, asm.Byte),
		asm.JNE.Imm(asm.R1, 0xff, "redirect"),
		asm.Mov.Imm(asm.R0, 1), // XDP_DROP
		asm.Return(),
	}
	const port = 4000
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "BSD",
		Instructions: xdpProgram(xdpFilter{port: port, v4: true, v6: true, addr: netip.IPv6Unspecified(), mtu: 1500, xskMapFD: xsks.FD(), pre: pre})})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	defer prog.Close()
	var mac [6]byte
	frame := func(src, dst netip.AddrPort, payload byte) []byte {
		f := make([]byte, frameHeader6+16)
		f[len(f)-16] = payload
		if src.Addr().Is4() {
			f[frameHeader4] = payload
		}
		return f[:buildFrame(f, &mac, &mac, src, dst, 16)]
	}
	v4, v6 := netip.MustParseAddrPort("198.18.0.2:5000"), netip.MustParseAddrPort("[2001:db8::2]:5000")
	to4, to6 := netip.MustParseAddrPort("198.18.0.1:4000"), netip.MustParseAddrPort("[2001:db8::1]:4000")
	other := netip.MustParseAddrPort("198.18.0.1:4001")
	for _, tt := range []struct {
		name    string
		frame   []byte
		verdict uint32
		slot    uint32 // the count that goes up, 0: none
	}{
		{"IPv4 to the port", frame(v4, to4, 'x'), xdpPass, 4},
		{"IPv4 dropped by the prefilter", frame(v4, to4, 0xff), 1, 4},
		{"IPv6 to the port", frame(v6, to6, 'x'), xdpPass, 6},
		{"IPv6 dropped by the prefilter", frame(v6, to6, 0xff), 1, 6},
		{"another port", frame(v4, other, 0xff), xdpPass, 0},
	} {
		before := map[uint32]uint64{}
		for _, k := range []uint32{4, 6} {
			var v uint64
			if err := seen.Lookup(k, &v); err != nil {
				t.Fatal(err)
			}
			before[k] = v
		}
		ret, err := prog.Run(&ebpf.RunOptions{Data: tt.frame})
		if errors.Is(err, ebpf.ErrNotSupported) {
			t.Skipf("BPF_PROG_TEST_RUN: %v", err)
		}
		if err != nil {
			t.Fatalf("%s: run: %v", tt.name, err)
		}
		if ret != tt.verdict {
			t.Errorf("%s: verdict %d; want %d", tt.name, ret, tt.verdict)
		}
		for _, k := range []uint32{4, 6} {
			var v uint64
			if err := seen.Lookup(k, &v); err != nil {
				t.Fatal(err)
			}
			want := before[k]
			if k == tt.slot {
				want++
			}
			if v != want {
				t.Errorf("%s: prefilter saw %d IPv%d datagrams; want %d", tt.name, v, k, want)
			}
		}
	}
}

func TestXDPPrefilterNeedsMode(t *testing.T) {
	x := XDP{Prefilter: asm.Instructions{asm.Return()}}
	if err := x.validate(); err == nil {
		t.Fatal("a prefilter without an XDP mode was accepted")
	}
}
