//go:build linux

package batchio

import (
	"cmp"
	"fmt"
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
	childRoles["xdp-burst"] = roleXDPBurst
	childRoles["sock-burst"] = roleSockBurst
}

// burstN is two ticks' inputs, or snapshots, of 2,000 players: more
// than a veth's 256-frame ring in native mode and the kernel's default
// copy-mode send budget of 32 frames per call, many times over, and
// more than the 2,048 receive frames of the old default UMEM.
const burstN = 4000

// burstStall is how long the server leaves its ring unread at first, as
// a server descheduled for a while (or busy with a tick) does: the
// inputs sent meanwhile wait in the receive ring, or are dropped.
const burstStall = 500 * time.Millisecond

// roleXDPBurst is a game server's tick on an AF_XDP conn: after a stall
// it reads the peer's burst of inputs, and on "go" answers with a burst
// of burstN 300-byte snapshots in one WriteBatch; on "quit" it reports
// how many inputs it read and its counters.
func roleXDPBurst(t *testing.T) {
	c, err := Listen(netip.MustParseAddrPort(os.Getenv("XDP_BIND")), Config{XDP: XDP{Mode: envMode(t), Interface: os.Getenv("XDP_IF")}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	xs := c.(XDPStatsReader)
	// The send buffer has room for every send frame: a full one stops a
	// send call (copy mode) with the rest of the ring unsent.
	fd := c.(*xdpConn).x.fd
	if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF); err != nil || v < defaultXDPFrames/2*XDPFrameSize {
		t.Fatalf("AF_XDP send buffer %d bytes (%v); want room for %d frames of %d", v, err, defaultXDPFrames/2, XDPFrameSize)
	}
	say("ready %d", c.LocalAddr().Port())
	time.Sleep(burstStall)
	in := makeMsgs(64, 2048)
	inputs, answered := 0, false
	end := time.Now().Add(30 * time.Second)
	for time.Now().Before(end) {
		n, err := c.ReadBatch(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range in[:n] {
			switch p := string(m.Buf[:m.N]); {
			case p == "go" && !answered:
				answered = true
				out := patterned(burstN, 300, m.Addr)
				for i := range out {
					out[i].N = 300
				}
				if w, err := c.WriteBatch(out); err != nil || w != burstN {
					t.Errorf("wrote %d of %d: %v", w, burstN, err)
				}
			case p == "quit":
				s := xs.XDPStats()
				say("stats inputs=%d noframe=%d rxdropped=%d ringfull=%d fillempty=%d kerntx=%d kernrx=%d",
					inputs, s.NoFrame, s.RxDropped, s.RxRingFull, s.RxFillEmpty, s.KernelTx, s.KernelRx)
				return
			case strings.HasPrefix(p, "in"):
				inputs++
			}
		}
		if n == 0 {
			if err := c.WaitRead(time.Now().Add(100 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatal("no quit within 30 s")
}

// roleSockBurst is the load: burstN inputs in one WriteBatch while the
// server stalls, then "go", then it counts the snapshots that arrive
// within two seconds of the stall's end.
func roleSockBurst(t *testing.T) {
	dst := netip.MustParseAddrPort(os.Getenv("XDP_DST"))
	c, err := Listen(netip.AddrPortFrom(netip.MustParseAddr(os.Getenv("XDP_SRC")), 0), Config{DisableGSO: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := makeMsgs(burstN, 64)
	for i := range out {
		out[i].N = copy(out[i].Buf, fmt.Sprintf("in%d", i))
		out[i].Addr = dst
	}
	if w, err := c.WriteBatch(out); err != nil || w != burstN {
		t.Fatalf("inputs: wrote %d of %d: %v", w, burstN, err)
	}
	// The server may still be reading inputs: it answers in turn. A
	// veth ring without a qdisc may drop "go" behind the burst: it is
	// sent again until the first snapshot arrives (the server answers
	// the first only).
	got, gos := 0, 0
	for ; gos < 20 && got == 0; gos++ {
		c.WriteBatch([]Message{{Buf: []byte("go"), N: 2, Addr: dst}})
		got = len(readWithin(t, c, makeMsgs(64, 2048), 1, burstStall/2))
	}
	got += len(readWithin(t, c, makeMsgs(64, 2048), burstN-got, 2*time.Second))
	c.WriteBatch([]Message{{Buf: []byte("quit"), N: 4, Addr: dst}})
	say("got %d %d", got, gos)
}

// TestXDPBurst: a burst of 4,000 inputs into an AF_XDP conn that does
// not read for half a second, and a burst of 4,000 snapshots out of it
// in one write, arrive complete, native and generic: the receive ring
// holds what a socket's default 4 MiB buffer holds, and a write sends
// all it was given.
//
// native-qdisc is the testbed's veth: a pfifo qdisc on both ends, and
// GRO with threaded NAPI on the receiver's, so that a full ring pushes
// back on the sender instead of dropping. Nothing may be lost then, and
// the snapshots the device pushed back must leave while the server only
// waits (WaitRead kicks them again), not a write later.
func TestXDPBurst(t *testing.T) {
	for _, mode := range []string{"native", "generic", "native-qdisc"} {
		t.Run(mode, func(t *testing.T) {
			p := newVethPair(t)
			qdisc := mode == "native-qdisc"
			if qdisc {
				mode = "native"
				if _, err := exec.LookPath("ethtool"); err != nil {
					t.Skip("needs ethtool for the receiver's NAPI (GRO)")
				}
				for _, c := range [][]string{
					{"netns", "exec", p.nsA, "tc", "qdisc", "replace", "dev", p.ifA, "root", "pfifo", "limit", "16384"},
					{"netns", "exec", p.nsB, "tc", "qdisc", "replace", "dev", p.ifB, "root", "pfifo", "limit", "16384"},
					{"netns", "exec", p.nsB, "ethtool", "-K", p.ifB, "gro", "on"},
					{"netns", "exec", p.nsB, "sh", "-c", "echo 1 > /sys/class/net/" + p.ifB + "/threaded"},
				} {
					if err := runIP(c...); err != nil {
						t.Fatal(err)
					}
				}
			}
			// As on the testbed (and across a NIC): what the server sends
			// is received on another core than the server's, so its send
			// buffers come back (and its completions) only as that core
			// gets to them.
			if err := runIP("netns", "exec", p.nsB, "sh", "-c", "echo 1 > /sys/class/net/"+p.ifB+"/queues/rx-0/rps_cpus"); err != nil {
				t.Fatal(err)
			}
			if qdisc {
				// The receiver's NAPI thread shares the server's core: it
				// drains the ring only while the server waits, so the
				// server's write stops at a full ring, and the rest
				// leaves only if WaitRead sends it.
				cpu := cmp.Or(lastCPU(), "0")
				if err := runIP("netns", "exec", p.nsB, "sh", "-c", "for t in $(pgrep '^napi/'); do grep -qx 'napi/"+p.ifB+"-[0-9]*' /proc/$t/comm && taskset -pc "+cpu+" $t >/dev/null; done; true"); err != nil {
					t.Fatal(err)
				}
			}
			srv := startChild(t, p.nsA, "xdp-burst", "XDP_BIND=0.0.0.0:0", "XDP_IF="+p.ifA, "XDP_MODE="+mode, "XDP_CPU="+lastCPU())
			port := mustPort(t, srv.expect("ready"))
			cli := startChild(t, p.nsB, "sock-burst", "XDP_SRC="+p.b4.String(),
				"XDP_DST="+netip.AddrPortFrom(p.a4, port).String())
			// got SNAPSHOTS GOS: the snapshots received and the "go"s sent.
			f := strings.Fields(cli.expect("got"))
			if len(f) != 2 {
				t.Fatalf("client said %q", f)
			}
			got, err := strconv.Atoi(f[0])
			if err != nil {
				t.Fatal(err)
			}
			gos, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			cli.wait()
			line := srv.expect("stats")
			st := parseStats(t, line)
			srv.wait()
			drops := ifaceDrops(t, p.nsA, p.ifA) + "; " + ifaceDrops(t, p.nsB, p.ifB)
			// In native mode the sender's veth hands frames to a ring of
			// 256 that the program's poll drains, and drops (counting
			// them as its tx_dropped) what finds it full: the kernel's
			// limit, not the conn's. Everything past it must arrive. The
			// ring may also have dropped all but one of the "go"s.
			ring := linkCounterIn(t, p.nsB, p.ifB, "tx_dropped")
			if qdisc {
				ring += linkCounterIn(t, p.nsA, p.ifA, "tx_dropped")
				if ring != 0 {
					t.Errorf("%d frames dropped by a veth ring behind a qdisc; want none", ring)
				}
			}
			// Every input is read or dropped by the ring, and so may be
			// every "go" but the one that started the burst.
			if sum := st["inputs"] + ring; st["inputs"] > burstN || sum < burstN || sum > burstN+uint64(gos-1) || st["rxdropped"] != 0 || got != burstN {
				t.Fatalf("%d of %d inputs read (%d dropped by the veth ring), %d of %d snapshots received; server %s; links %s",
					st["inputs"], burstN, ring, got, burstN, line, drops)
			}
			t.Logf("server %s; links %s", line, drops)
		})
	}
}

// ifaceDrops is the drop counts of ip -s link for ifname in ns.
func ifaceDrops(t *testing.T, ns, ifname string) string {
	out, err := exec.Command("ip", "-n", ns, "-s", "link", "show", "dev", ifname).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%v: %s", err, out)
	}
	// RX: bytes packets errors dropped ... on the line after the header.
	lines := strings.Split(string(out), "\n")
	var f []string
	for i, l := range lines {
		if (strings.Contains(l, "RX:") || strings.Contains(l, "TX:")) && i+1 < len(lines) {
			v := strings.Fields(lines[i+1])
			if len(v) >= 4 {
				f = append(f, strings.TrimSpace(strings.Fields(l)[0])+" pkts "+v[1]+" dropped "+v[3])
			}
		}
	}
	return ifname + " " + strings.Join(f, " ")
}

// lastCPU is the highest-numbered CPU this process may run on, as a
// taskset argument: the server's core, CPU 0 being the receiver's.
func lastCPU() string {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return ""
	}
	last := -1
	for i := range 1024 {
		if set.IsSet(i) {
			last = i
		}
	}
	if last < 1 {
		return ""
	}
	return strconv.Itoa(last)
}

// linkCounterIn reads one statistic of ifname in namespace ns.
func linkCounterIn(t *testing.T, ns, ifname, name string) uint64 {
	out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/sys/class/net/"+ifname+"/statistics/"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("%s of %s: %v: %s", name, ifname, err, out)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
