//go:build linux

package batchio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	childRoles["xdp-echo"] = roleXDPEcho
	childRoles["sock-client"] = roleSockClient
	childRoles["pktinfo-client"] = rolePktinfoClient
	childRoles["sock-echo"] = roleSockEcho
	childRoles["xdp-client"] = roleXDPClient
	childRoles["xdp-attach"] = roleXDPAttach
	childRoles["xdp-allocs"] = roleXDPAllocs
	childRoles["xdp-group"] = roleXDPGroup
	childRoles["xdp-wait"] = roleXDPWait
	childRoles["raw-send"] = roleRawSend
}

// roleRawSend writes hand-made frames from B's interface with a packet
// socket: a good datagram, one with a bad UDP checksum, one with IPv4
// options (valid), one to another port, a truncated one, and "quit".
func roleRawSend(t *testing.T) {
	ifc, err := net.InterfaceByName(os.Getenv("XDP_IF"))
	if err != nil {
		t.Fatal(err)
	}
	dstMAC, err := net.ParseMAC(os.Getenv("XDP_DSTMAC"))
	if err != nil {
		t.Fatal(err)
	}
	src := netip.MustParseAddrPort(os.Getenv("XDP_SRC"))
	dst := netip.MustParseAddrPort(os.Getenv("XDP_DST"))
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	sa := &unix.SockaddrLinklayer{Ifindex: ifc.Index, Halen: 6}
	copy(sa.Addr[:], dstMAC)
	frame := func(to netip.AddrPort, payload string) []byte {
		f := make([]byte, frameHeader4+len(payload))
		copy(f[frameHeader4:], payload)
		return f[:buildFrame(f, (*[6]byte)(ifc.HardwareAddr), (*[6]byte)(dstMAC), src, to, len(payload))]
	}
	badSum := frame(dst, "bad checksum")
	badSum[len(badSum)-1] ^= 0xff
	// IPv4 options: four NOPs after the fixed header.
	good := frame(dst, "options")
	opts := append(append(bytes.Clone(good[:ethHeaderLen+ipv4HeaderLen]), 1, 1, 1, 1), good[ethHeaderLen+ipv4HeaderLen:]...)
	ip := opts[ethHeaderLen : ethHeaderLen+ipv4HeaderLen+4]
	ip[0] = 0x46
	binary.BigEndian.PutUint16(ip[2:4], uint16(len(opts)-ethHeaderLen))
	binary.BigEndian.PutUint16(ip[10:12], 0)
	binary.BigEndian.PutUint16(ip[10:12], ^fold(checksum(ip, 0)))
	// A first fragment (more fragments, offset 0): a whole UDP header.
	frag := frame(dst, "fragment")
	fip := frag[ethHeaderLen : ethHeaderLen+ipv4HeaderLen]
	binary.BigEndian.PutUint16(fip[6:8], 0x2000)
	binary.BigEndian.PutUint16(fip[10:12], 0)
	binary.BigEndian.PutUint16(fip[10:12], ^fold(checksum(fip, 0)))
	for _, f := range [][]byte{
		frame(dst, "good"), badSum, opts, frag,
		frame(netip.AddrPortFrom(dst.Addr(), dst.Port()+1), "other port"),
		frame(dst, "truncated")[:ethHeaderLen+10],
		frame(dst, "quit"),
	} {
		if err := unix.Sendto(fd, f, 0, sa); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	say("sent")
}

// TestXDPMalformedAndPassed: frames written raw onto the link reach the
// AF_XDP echo as the program and the parser decide: a good datagram
// through the ring, one with a bad UDP checksum through the ring to be
// dropped and counted by reason, one with IPv4 options passed to the
// kernel and read from the kernel socket, the rest (a fragment, another
// port, a truncated frame) left to the kernel.
func TestXDPMalformedAndPassed(t *testing.T) {
	p := newVethPair(t)
	out, err := exec.Command("ip", "-n", p.nsA, "-o", "link", "show", "dev", p.ifA).CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(out), "link/ether ")
	mac := strings.Fields(rest)[0]
	srv := startChild(t, p.nsA, "xdp-echo", "XDP_BIND="+netip.AddrPortFrom(p.a4, 40000).String(), "XDP_IF="+p.ifA, "XDP_MODE=native")
	srv.expect("ready")
	raw := startChild(t, p.nsB, "raw-send", "XDP_IF="+p.ifB, "XDP_DSTMAC="+mac,
		"XDP_SRC="+netip.AddrPortFrom(p.b4, 5555).String(), "XDP_DST="+netip.AddrPortFrom(p.a4, 40000).String())
	raw.expect("sent")
	raw.wait()
	st := parseStats(t, srv.expect("stats"))
	srv.wait()
	// good, options (kernel) and quit; one malformed: the checksum.
	if st["rx"] != 3 || st["kernrx"] != 1 || st["malformed"] != 1 || st["badsum"] != 1 {
		t.Fatalf("echo counters %v; want 3 read (1 from the kernel socket), 1 malformed by checksum", st)
	}
}

// roleXDPWait: Wake ends a WaitRead without a deadline, Close ends
// another with ErrClosed, and the conn's methods then say ErrClosed.
func roleXDPWait(t *testing.T) {
	c, err := Listen(netip.MustParseAddrPort("0.0.0.0:0"), Config{XDP: XDP{Mode: XDPNative, Interface: os.Getenv("XDP_IF")}})
	if err != nil {
		t.Fatal(err)
	}
	if c.(StatsReader).Stats().BlockingWait {
		t.Fatal("Stats.BlockingWait: an XDP conn's wait parks on the netpoller")
	}
	t0 := time.Now()
	if err := c.WaitRead(t0.Add(30 * time.Millisecond)); err != nil || time.Since(t0) < 30*time.Millisecond {
		t.Fatalf("WaitRead with a 30 ms deadline: %v after %v", err, time.Since(t0))
	}
	for _, end := range []string{"wake", "close"} {
		done := waitErr(c, time.Time{})
		select {
		case err := <-done:
			t.Fatalf("WaitRead returned before %s: %v", end, err)
		case <-time.After(50 * time.Millisecond):
		}
		if end == "wake" {
			c.(Waker).Wake()
		} else {
			c.Close()
		}
		select {
		case err := <-done:
			if end == "wake" && err != nil || end == "close" && err != ErrClosed {
				t.Fatalf("WaitRead after %s: %v", end, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("WaitRead still blocked 2 s after %s", end)
		}
	}
	if _, err := c.ReadBatch(makeMsgs(1, 64)); err != ErrClosed {
		t.Fatalf("ReadBatch after Close: %v", err)
	}
	if _, err := c.WriteBatch([]Message{{Buf: []byte("x"), N: 1, Addr: netip.MustParseAddrPort("198.18.0.2:9")}}); err != ErrClosed {
		t.Fatalf("WriteBatch after Close: %v", err)
	}
	if c.Close() != nil {
		t.Fatal("second Close failed")
	}
	say("ok")
}

// TestXDPWaitWakeClose runs roleXDPWait in a namespace.
func TestXDPWaitWakeClose(t *testing.T) {
	p := newVethPair(t)
	c := startChild(t, p.nsA, "xdp-wait", "XDP_IF="+p.ifA)
	c.expect("ok")
	c.wait()
}

// roleXDPGroup opens a group of one conn per receive queue and reports
// the queues, then asks for one more conn than queues.
func roleXDPGroup(t *testing.T) {
	cfg := Config{XDP: XDP{Mode: XDPNative, Interface: os.Getenv("XDP_IF")}}
	conns, err := ListenGroup(netip.MustParseAddrPort("0.0.0.0:0"), 2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var queues []string
	for _, c := range conns {
		queues = append(queues, strconv.Itoa(c.(XDPStatsReader).XDPStats().Queue))
		if c.LocalAddr() != conns[0].LocalAddr() {
			t.Fatalf("group on %v and %v", c.LocalAddr(), conns[0].LocalAddr())
		}
	}
	say("queues %s", strings.Join(queues, ","))
	// Closing one keeps the program for the other.
	// A second group on the interface is refused, naming the program.
	if _, err := ListenGroup(netip.MustParseAddrPort("0.0.0.0:0"), 1, cfg); err == nil || !strings.Contains(err.Error(), "attached already") {
		t.Fatalf("second group on the interface: %v", err)
	}
	conns[0].Close()
	if id, _ := attachedXDP(os.Getenv("XDP_IF")); id == 0 {
		t.Fatal("program detached while a conn of the group is open")
	}
	conns[1].Close()
	if id, _ := attachedXDP(os.Getenv("XDP_IF")); id != 0 {
		t.Fatal("program attached after the group closed")
	}
	_, err = ListenGroup(netip.MustParseAddrPort("0.0.0.0:0"), 3, cfg)
	say("three %v", err)
}

// TestXDPGroup: on a veth with two receive queues, a group of two conns
// takes queues 0 and 1 and shares one program, detached with the last
// conn; a group of three is refused, saying why.
func TestXDPGroup(t *testing.T) {
	p := newVethPair(t)
	// A second pair with two queues in the same namespaces.
	ifA, ifB := p.ifA+"q", p.ifB+"q"
	if err := runIP("link", "add", ifA, "netns", p.nsA, "numrxqueues", "2", "numtxqueues", "2", "type", "veth",
		"peer", "name", ifB, "netns", p.nsB, "numrxqueues", "2", "numtxqueues", "2"); err != nil {
		t.Fatal(err)
	}
	for _, s := range [][]string{{"-n", p.nsA, "addr", "add", "198.18.1.1/24", "dev", ifA}, {"-n", p.nsA, "link", "set", ifA, "up"}, {"-n", p.nsB, "link", "set", ifB, "up"}} {
		if err := runIP(s...); err != nil {
			t.Fatal(err)
		}
	}
	c := startChild(t, p.nsA, "xdp-group", "XDP_IF="+ifA)
	if q := c.expect("queues"); q != "0,1" {
		t.Fatalf("queues %s, want 0,1", q)
	}
	if msg := c.expect("three"); !strings.Contains(msg, "3 conns but 2 receive queues") {
		t.Fatalf("group of three: %s", msg)
	}
	c.wait()
}

func envMode(t *testing.T) XDPMode {
	m, err := ParseXDPMode(os.Getenv("XDP_MODE"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// roleXDPEcho echoes every datagram on an AF_XDP conn until one says
// "quit" (bounded at 40 s), then reports the conn's counters.
func roleXDPEcho(t *testing.T) {
	c, err := Listen(netip.MustParseAddrPort(os.Getenv("XDP_BIND")), Config{XDP: XDP{Mode: envMode(t), Interface: os.Getenv("XDP_IF")},
		PacketInfo: os.Getenv("XDP_PKTINFO") != ""})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	xs, ok := As[XDPStatsReader](c)
	if !ok {
		t.Fatal("not an AF_XDP conn")
	}
	say("ready %d %v", c.LocalAddr().Port(), xs.XDPStats().Mode)
	msgs := makeMsgs(64, 2048)
	end := time.Now().Add(40 * time.Second)
	for time.Now().Before(end) {
		n, err := c.ReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if string(msgs[i].Buf[:msgs[i].N]) == "quit" {
				s := xs.XDPStats()
				say("stats rx=%d kernrx=%d kerntx=%d malformed=%d badsum=%d noframe=%d", c.(StatsReader).Stats().RecvPackets,
					s.KernelRx, s.KernelTx, s.Malformed, s.MalformedBy[frameChecksum-1], s.NoFrame)
				return
			}
		}
		if n > 0 {
			if _, err := c.WriteBatch(msgs[:n]); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := c.WaitRead(time.Now().Add(100 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if os.Getenv("XDP_DEBUG") != "" {
			fmt.Fprintf(os.Stderr, "%+v %+v\n", xs.XDPStats(), c.(StatsReader).Stats())
		}
	}
	t.Fatal("no quit within 40 s")
}

// roleSockEcho is roleXDPEcho on the socket path, without counters.
func roleSockEcho(t *testing.T) {
	c, err := Listen(netip.MustParseAddrPort(os.Getenv("XDP_BIND")), Config{DisableGSO: os.Getenv("XDP_NOGSO") != ""})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	say("ready %d", c.LocalAddr().Port())
	msgs := makeMsgs(64, 2048)
	end := time.Now().Add(40 * time.Second)
	for time.Now().Before(end) {
		n, err := c.ReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if string(msgs[i].Buf[:msgs[i].N]) == "quit" {
				return
			}
		}
		if n > 0 {
			c.WriteBatch(msgs[:n])
			continue
		}
		c.WaitRead(time.Now().Add(100 * time.Millisecond))
	}
	t.Fatal("no quit within 40 s")
}

// echoRounds sends rounds of patterned datagrams (sizes from 1 to 1,400
// bytes) to dst and checks every echo byte for byte, in order per round.
func echoRounds(t *testing.T, c Conn, dst netip.AddrPort, rounds, per int, quit bool) {
	in := makeMsgs(per, 2048)
	for r := range rounds {
		out := patterned(per, 1400, dst)
		for i := range out {
			out[i].N = 1 + (r*per+i)*97%1400
			for j := range out[i].N {
				out[i].Buf[j] = byte(r*7 + i*31 + j)
			}
		}
		if n, err := c.WriteBatch(out); err != nil || n != per {
			t.Fatalf("round %d: wrote %d of %d: %v", r, n, per, err)
		}
		// Three seconds: a neighbour solicitation lost on a link just
		// up is repeated after one.
		got := readWithin(t, c, in, per, 3*time.Second)
		if len(got) != per {
			var xs XDPStats
			if x, ok := As[XDPStatsReader](c); ok {
				xs = x.XDPStats()
			}
			st, _ := As[StatsReader](c)
			t.Fatalf("round %d: %d echoes of %d; %+v %+v", r, len(got), per, xs, st.Stats())
		}
		// Order over the two paths (ring and kernel socket) may differ:
		// match by content.
		want := map[string]int{}
		for _, m := range out {
			want[string(m.Buf[:m.N])]++
		}
		for _, m := range got {
			if m.Addr != dst {
				t.Fatalf("round %d: echo from %v, want %v", r, m.Addr, dst)
			}
			k := string(m.Buf[:m.N])
			if want[k] == 0 {
				t.Fatalf("round %d: echo %x... (%d B) was not sent", r, m.Buf[:min(m.N, 16)], m.N)
			}
			want[k]--
		}
	}
	if quit {
		c.WriteBatch([]Message{{Buf: []byte("quit"), N: 4, Addr: dst}})
	}
}

// roleSockClient runs echoRounds from a socket.
func roleSockClient(t *testing.T) {
	dst := netip.MustParseAddrPort(os.Getenv("XDP_DST"))
	c, err := Listen(netip.AddrPortFrom(netip.MustParseAddr(os.Getenv("XDP_SRC")), 0), Config{DisableGSO: os.Getenv("XDP_NOGSO") != ""})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echoRounds(t, c, dst, 20, 32, true)
	say("done")
}

// rolePktinfoClient sends to each address in XDP_DSTS and checks that
// every echo comes back from the address it was sent to.
func rolePktinfoClient(t *testing.T) {
	var dsts []netip.AddrPort
	for _, s := range strings.Fields(os.Getenv("XDP_DSTS")) {
		dsts = append(dsts, netip.MustParseAddrPort(s))
	}
	c, err := Listen(netip.AddrPortFrom(netip.MustParseAddr(os.Getenv("XDP_SRC")), 0), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msgs := makeMsgs(64, 2048)
	for round := range 10 {
		out := make([]Message, len(dsts))
		for i, d := range dsts {
			p := fmt.Sprintf("%d %s", round, d)
			out[i] = Message{Buf: []byte(p), N: len(p), Addr: d}
		}
		if n, err := c.WriteBatch(out); err != nil || n != len(out) {
			t.Fatalf("sent %d of %d: %v", n, len(out), err)
		}
		for _, m := range readWithin(t, c, msgs, len(dsts), 5*time.Second) {
			var r int
			var to string
			if _, err := fmt.Sscanf(string(m.Buf[:m.N]), "%d %s", &r, &to); err != nil || r != round {
				t.Fatalf("echo %q in round %d", m.Buf[:m.N], round)
			}
			if to != m.Addr.String() {
				t.Fatalf("the echo of a datagram sent to %s came from %s", to, m.Addr)
			}
		}
	}
	quit := []Message{{Buf: []byte("quit"), N: 4, Addr: dsts[0]}}
	if _, err := c.WriteBatch(quit); err != nil {
		t.Fatal(err)
	}
	say("done")
}

// TestXDPPacketInfo: an AF_XDP conn on the unspecified address with
// PacketInfo, on an interface with two addresses, answers each datagram
// from the address it was sent to (reads fill Message.Local, writes send
// from it), over the ring: the shape of netbench's shared load sockets.
func TestXDPPacketInfo(t *testing.T) {
	p := newVethPair(t)
	second := netip.MustParseAddr("198.18.0.3")
	if err := runIP("-n", p.nsA, "addr", "add", second.String()+"/24", "dev", p.ifA); err != nil {
		t.Fatal(err)
	}
	srv := startChild(t, p.nsA, "xdp-echo", "XDP_BIND=0.0.0.0:0", "XDP_IF="+p.ifA, "XDP_MODE=native", "XDP_PKTINFO=1")
	port := mustPort(t, strings.Fields(srv.expect("ready"))[0])
	cli := startChild(t, p.nsB, "pktinfo-client", "XDP_SRC="+p.b4.String(),
		"XDP_DSTS="+netip.AddrPortFrom(p.a4, port).String()+" "+netip.AddrPortFrom(second, port).String())
	cli.expect("done")
	cli.wait()
	st := parseStats(t, srv.expect("stats"))
	srv.wait()
	// 10 rounds of 2 and the quit; the first replies may go through the
	// kernel socket (no link-layer address yet), the rest on the ring.
	if st["rx"] != 21 || st["kernrx"] != 0 || st["malformed"] != 0 {
		t.Fatalf("echo counters %v; want 21 datagrams all received over AF_XDP", st)
	}
}

// roleXDPClient runs echoRounds from an AF_XDP conn, which has to find
// the peer's link-layer address itself, and reports how its datagrams
// went.
func roleXDPClient(t *testing.T) {
	dst := netip.MustParseAddrPort(os.Getenv("XDP_DST"))
	c, err := Listen(netip.AddrPortFrom(netip.MustParseAddr(os.Getenv("XDP_SRC")), 0), Config{XDP: XDP{Mode: envMode(t), Interface: os.Getenv("XDP_IF")}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Rounds across more than the neighbour refresh: the first go out
	// through the kernel, the later as frames.
	for i := range 3 {
		echoRounds(t, c, dst, 5, 16, i == 2)
		time.Sleep(600 * time.Millisecond)
	}
	s := c.(XDPStatsReader).XDPStats()
	st := c.(StatsReader).Stats()
	say("stats kerntx=%d sent=%d kernrx=%d rx=%d", s.KernelTx, st.SendPackets, s.KernelRx, st.RecvPackets)
}

// readWithin drains up to want datagrams, waiting at most d overall.
func readWithin(t *testing.T, c Conn, msgs []Message, want int, d time.Duration) []Message {
	t.Helper()
	var out []Message
	deadline := time.Now().Add(d)
	for len(out) < want && time.Now().Before(deadline) {
		n, err := c.ReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:n] {
			out = append(out, Message{Buf: bytes.Clone(m.Buf[:m.N]), N: m.N, Addr: m.Addr})
		}
		if n == 0 {
			if err := c.WaitRead(deadline); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

func parseStats(t testing.TB, s string) map[string]uint64 {
	out := map[string]uint64{}
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("stats %q: %v", s, err)
		}
		out[k] = n
	}
	return out
}

// TestXDPEcho: a socket in B sends to an AF_XDP echo in A, IPv4 and IPv6,
// native and generic; every datagram comes back byte for byte, and all
// of them went through the AF_XDP socket, none through the kernel's.
func TestXDPEcho(t *testing.T) {
	for _, mode := range []string{"native", "generic"} {
		// ipv6-on-0.0.0.0: an unspecified IPv4 bind takes IPv6 on the
		// ring too (replies through the ring, to the learned address).
		for _, fam := range []string{"ipv4", "ipv6", "ipv6-on-0.0.0.0"} {
			t.Run(mode+"/"+fam, func(t *testing.T) {
				p := newVethPair(t)
				bind, src, dst := "0.0.0.0:0", p.b4, p.a4
				switch fam {
				case "ipv6":
					bind, src, dst = "[::]:0", p.b6, p.a6
				case "ipv6-on-0.0.0.0":
					src, dst = p.b6, p.a6
				}
				srv := startChild(t, p.nsA, "xdp-echo", "XDP_BIND="+bind, "XDP_IF="+p.ifA, "XDP_MODE="+mode)
				ready := strings.Fields(srv.expect("ready"))
				if ready[1] != mode {
					t.Fatalf("attached %s, want %s", ready[1], mode)
				}
				// In generic mode the program sees a local sender's GSO
				// send as one frame (the segments joined, within the MTU
				// if small), which the parser cannot tell from one
				// datagram: a documented limit, so the peer sends plainly.
				nogso := ""
				if mode == "generic" {
					nogso = "1"
				}
				cli := startChild(t, p.nsB, "sock-client", "XDP_SRC="+src.String(), "XDP_NOGSO="+nogso,
					"XDP_DST="+netip.AddrPortFrom(dst, mustPort(t, ready[0])).String())
				cli.expect("done")
				cli.wait()
				st := parseStats(t, srv.expect("stats"))
				srv.wait()
				// 20 rounds of 32 and the quit.
				if st["rx"] != 641 || st["kernrx"] != 0 || st["kerntx"] != 0 || st["malformed"] != 0 {
					t.Fatalf("echo counters %v; want 641 datagrams all over AF_XDP", st)
				}
			})
		}
	}
}

func mustPort(t *testing.T, s string) uint16 {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(n)
}

// TestXDPNeighbour: an AF_XDP conn that speaks first has no link-layer
// address for its peer. Its first datagrams go out through the kernel
// socket (which resolves it: ARP for IPv4, neighbour discovery for IPv6,
// both passed to the kernel by the program), later ones as frames built
// to the address the neighbour table then holds; and ICMP still reaches
// the kernel with the program attached.
func TestXDPNeighbour(t *testing.T) {
	for _, fam := range []string{"ipv4", "ipv6"} {
		t.Run(fam, func(t *testing.T) {
			p := newVethPair(t)
			bind, src, dst := "0.0.0.0:0", p.a4, p.b4
			if fam == "ipv6" {
				bind, src, dst = "[::]:0", p.a6, p.b6
			}
			echo := startChild(t, p.nsB, "sock-echo", "XDP_BIND="+bind)
			port := mustPort(t, echo.expect("ready"))
			cli := startChild(t, p.nsA, "xdp-client", "XDP_SRC="+src.String(), "XDP_IF="+p.ifA, "XDP_MODE=native",
				"XDP_DST="+netip.AddrPortFrom(dst, port).String())
			st := parseStats(t, cli.expect("stats"))
			cli.wait()
			echo.wait()
			if st["kerntx"] == 0 || st["kerntx"] >= st["sent"] {
				t.Fatalf("client counters %v: want some datagrams sent through the kernel and the rest as frames", st)
			}
		})
	}
}

// roleXDPAttach attaches, says so, and waits to be killed (or 30 s).
func roleXDPAttach(t *testing.T) {
	c, err := Listen(netip.MustParseAddrPort("0.0.0.0:0"), Config{XDP: XDP{Mode: envMode(t), Interface: os.Getenv("XDP_IF")}})
	if err != nil {
		say("error %v", err)
		t.Fatal(err)
	}
	id, err := attachedXDP(os.Getenv("XDP_IF"))
	if err != nil || id == 0 {
		t.Fatalf("no program attached after Listen: %d %v", id, err)
	}
	say("attached %d", id)
	if os.Getenv("XDP_CLOSE") != "" {
		c.Close()
		id, err := attachedXDP(os.Getenv("XDP_IF"))
		if err != nil {
			t.Fatal(err)
		}
		say("closed %d", id)
		return
	}
	time.Sleep(30 * time.Second)
}

// xdpProgOn asks ip(8) in ns, independently of the code under test,
// whether an XDP program is attached to ifname.
func xdpProgOn(t *testing.T, ns, ifname string) bool {
	out, err := exec.Command("ip", "-n", ns, "-d", "link", "show", "dev", ifname).CombinedOutput()
	if err != nil {
		t.Fatalf("ip link show: %v: %s", err, out)
	}
	return bytes.Contains(out, []byte("prog/xdp"))
}

// TestXDPDetach: Close detaches the program; so does the death of a
// process killed with SIGKILL (the attachment is a bpf_link, whose last
// descriptor dies with it), and the next start attaches again.
func TestXDPDetach(t *testing.T) {
	p := newVethPair(t)
	env := []string{"XDP_IF=" + p.ifA, "XDP_MODE=native"}
	c := startChild(t, p.nsA, "xdp-attach", append(env, "XDP_CLOSE=1")...)
	c.expect("attached")
	if got := c.expect("closed"); got != "0" {
		t.Fatalf("program %s still attached after Close", got)
	}
	c.wait()
	if xdpProgOn(t, p.nsA, p.ifA) {
		t.Fatal("ip link shows an XDP program after Close")
	}
	for i := range 2 {
		c := startChild(t, p.nsA, "xdp-attach", env...)
		c.expect("attached")
		if !xdpProgOn(t, p.nsA, p.ifA) {
			t.Fatal("ip link shows no XDP program while attached")
		}
		if err := c.cmd.Process.Kill(); err != nil { // SIGKILL: no Close, no deferred cleanup
			t.Fatal(err)
		}
		c.wait2()
		// The kernel releases the link when the dead process's files
		// are closed, which may lag its exit a little.
		deadline := time.Now().Add(5 * time.Second)
		for xdpProgOn(t, p.nsA, p.ifA) {
			if time.Now().After(deadline) {
				t.Fatalf("start %d: an XDP program is still attached 5 s after the process was killed", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// wait2 waits for a child that was killed.
func (c *child) wait2() {
	for range c.lines {
	}
	err := <-c.done
	c.done <- err
	if err == nil {
		c.t.Fatal("killed child exited cleanly")
	}
}

var _ = fmt.Sprint

// roleXDPAllocs: once the peer's link-layer address is learned, a round of
// WriteBatch, WaitRead and ReadBatch on the AF_XDP path allocates nothing.
func roleXDPAllocs(t *testing.T) {
	dst := netip.MustParseAddrPort(os.Getenv("XDP_DST"))
	c, err := Listen(netip.AddrPortFrom(netip.MustParseAddr(os.Getenv("XDP_SRC")), 0), Config{XDP: XDP{Mode: XDPNative, Interface: os.Getenv("XDP_IF")}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Warm up: the first datagrams teach the conn the peer's address.
	echoRounds(t, c, dst, 3, 16, false)
	out := patterned(16, 300, dst)
	in := makeMsgs(16, 2048)
	echoed := 0
	round := func() {
		if n, _ := c.WriteBatch(out); n != len(out) {
			t.Fatalf("wrote %d of %d", n, len(out))
		}
		got := 0
		deadline := time.Now().Add(time.Second)
		for got < len(out) && time.Now().Before(deadline) {
			n, err := c.ReadBatch(in)
			if err != nil {
				t.Fatal(err)
			}
			got += n
			if n == 0 {
				c.WaitRead(deadline)
			}
		}
		echoed += got
	}
	allocs := testing.AllocsPerRun(200, round)
	s := c.(XDPStatsReader).XDPStats()
	say("allocs %v echoed=%d kerntx=%d kernrx=%d", allocs, echoed, s.KernelTx, s.KernelRx)
}

// TestXDPAllocs: the steady state of the AF_XDP path allocates nothing
// per batch, measured over 200 echo rounds through the ring.
func TestXDPAllocs(t *testing.T) {
	p := newVethPair(t)
	echo := startChild(t, p.nsB, "sock-echo", "XDP_BIND="+p.b4.String()+":0")
	port := mustPort(t, echo.expect("ready"))
	c := startChild(t, p.nsA, "xdp-allocs", "XDP_SRC="+p.a4.String(), "XDP_IF="+p.ifA,
		"XDP_DST="+netip.AddrPortFrom(p.b4, port).String())
	line := c.expect("allocs")
	c.wait()
	f := strings.Fields(line)
	st := parseStats(t, strings.Join(f[1:], " "))
	if f[0] != "0" {
		t.Fatalf("%s allocations per round; want 0 (%v)", f[0], st)
	}
	// 201 rounds of 16 (AllocsPerRun runs one more to warm up).
	if st["echoed"] != 201*16 {
		t.Fatalf("echoed %d of %d: the rounds did not go through", st["echoed"], 201*16)
	}
}

// TestXDPTryFallback: XDPTry on an interface that does not exist fails
// to attach and opens the socket path instead; XDPNative says why it
// cannot.
func TestXDPTryFallback(t *testing.T) {
	cfg := Config{XDP: XDP{Mode: XDPTry, Interface: "nonexistent0"}}
	c, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := As[XDPStatsReader](c); ok {
		t.Fatal("XDPTry without an interface gave an AF_XDP conn")
	}
	// A source limit cannot hold on the ring: XDPTry takes the socket
	// path, where it does; XDPNative refuses unless it is optional.
	cfg.SourceLimit = SourceLimit{Rate: 100, Burst: 10}
	c2, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
	cfg.XDP.Mode = XDPNative
	if _, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), cfg); err == nil || !strings.Contains(err.Error(), "SourceLimit") {
		t.Fatalf("XDPNative with a source limit: %v", err)
	}
	cfg.SourceLimit = SourceLimit{}
	if _, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), cfg); err == nil || !strings.Contains(err.Error(), "nonexistent0") {
		t.Fatalf("XDPNative on a missing interface: %v", err)
	}
}

// TestXDPNativeUnsupported: a bridge interface has no native XDP: the
// native mode fails saying so (ErrXDPUnsupported), the generic one
// attaches.
func TestXDPNativeUnsupported(t *testing.T) {
	p := newVethPair(t)
	for _, s := range [][]string{{"-n", p.nsA, "link", "add", "nd0", "type", "bridge"}, {"-n", p.nsA, "link", "set", "nd0", "up"}} {
		if err := runIP(s...); err != nil {
			t.Skipf("no bridge interface: %v", err)
		}
	}
	c := startChild(t, p.nsA, "xdp-attach", "XDP_IF=nd0", "XDP_MODE=native")
	msg := c.expect("error")
	if !strings.Contains(msg, ErrXDPUnsupported.Error()) || !strings.Contains(msg, "native mode") {
		t.Fatalf("native on a bridge: %q; want it to say native mode is unavailable", msg)
	}
	t.Log(msg)
	c = startChild(t, p.nsA, "xdp-attach", "XDP_IF=nd0", "XDP_MODE=generic", "XDP_CLOSE=1")
	c.expect("attached")
	c.expect("closed")
	c.wait()
}

func TestXDPConfig(t *testing.T) {
	for _, tc := range []struct {
		x    XDP
		want string
	}{
		{XDP{Mode: XDPMode(7), Interface: "x"}, "XDP mode 7"},
		{XDP{Mode: XDPNative}, "needs an Interface"},
		{XDP{Mode: XDPGeneric, Interface: "x", Frames: 100}, "power of two"},
		{XDP{Mode: XDPGeneric, Interface: "x", Frames: 32}, "power of two"},
		{XDP{Mode: XDPGeneric, Interface: "x", Frames: 1 << 17}, "power of two"},
	} {
		cfg := Config{XDP: tc.x}
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.x, err, tc.want)
		}
	}
	for _, s := range []string{"off", "native", "generic", "try"} {
		m, err := ParseXDPMode(s)
		if err != nil || m.String() != s {
			t.Errorf("%s: %v %v", s, m, err)
		}
	}
	if _, err := ParseXDPMode("zerocopy"); err == nil {
		t.Error("ParseXDPMode accepted zerocopy")
	}
}
