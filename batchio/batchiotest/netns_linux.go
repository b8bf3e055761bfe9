//go:build linux

package batchiotest

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/netcode-go/netcode/batchio"
)

// A Veth is a testbed for the AF_XDP path inside one test process: two
// network namespaces, A and B, joined by a veth pair, with addresses from
// the benchmarking ranges only (198.18.0.0/15 and 2001:2::/48) and no
// route out. Code runs in a namespace through In, on an OS thread that
// entered it: a socket, an AF_XDP socket or an XDP link belongs to the
// namespace it was created in and then works from any thread, so a test
// opens the server's conns in A and its clients' in B and runs the rest
// as usual.
type Veth struct {
	A, B     *Netns
	IfA, IfB string
	A4, B4   netip.Addr // IPv4 of IfA and IfB
	A6, B6   netip.Addr // IPv6 of IfA and IfB
}

// VethConfig configures NewVeth.
type VethConfig struct {
	// Queues is the number of receive and transmit queues of each end
	// (default 1): an AF_XDP conn serves one receive queue, so a group of
	// n conns needs n. Frames from B spread over A's queues by B's
	// transmit queue, a hash of the flow.
	Queues int
}

// Netns is a named network namespace created by NewVeth.
type Netns struct {
	Name string
	fd   int
}

var vethSeq atomic.Int32

// NewVeth creates the namespaces and the veth pair, or skips the test
// saying why it cannot (not root, no ip(8), or the namespace cannot be
// made); under CI=true, as root, a missing ip(8) fails it. Cleanup deletes both
// namespaces, and with them the link, whatever the test's outcome; it is
// registered first, so it runs after the cleanups of conns opened later.
func NewVeth(t testing.TB, cfg VethConfig) *Veth {
	t.Helper()
	if cfg.Queues == 0 {
		cfg.Queues = 1
	}
	if cfg.Queues < 1 || cfg.Queues > 64 {
		t.Fatalf("batchiotest: %d veth queues; want 1 to 64", cfg.Queues)
	}
	if os.Geteuid() != 0 {
		t.Skip("the AF_XDP testbed needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no ip(8) (iproute2) for the veth testbed: CI installs it (.ci/run)")
		}
		t.Skip("no ip(8) (iproute2) to create network namespaces")
	}
	// pid-seq: unambiguous across test binaries running at once.
	id := fmt.Sprintf("%d-%d", os.Getpid()%100000, vethSeq.Add(1))
	v := &Veth{
		A: &Netns{Name: "ncvethA" + id, fd: -1}, B: &Netns{Name: "ncvethB" + id, fd: -1},
		IfA: "va" + id, IfB: "vb" + id,
		A4: netip.MustParseAddr("198.18.0.1"), B4: netip.MustParseAddr("198.18.0.2"),
		A6: netip.MustParseAddr("2001:2::1"), B6: netip.MustParseAddr("2001:2::2"),
	}
	t.Cleanup(v.close)
	if err := v.A.add(); err != nil {
		t.Skipf("cannot create a network namespace: %v", err)
	}
	if err := v.B.add(); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []*Netns{v.A, v.B} {
		// No duplicate address detection: a tentative link-local address
		// delays neighbour discovery by seconds.
		err := ns.In(func() error {
			for _, f := range []string{"default", "all"} {
				p := filepath.Join("/proc/sys/net/ipv6/conf", f, "accept_dad")
				if err := os.WriteFile(p, []byte("0"), 0); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("batchiotest: namespace %s: %v", ns.Name, err)
		}
	}
	q := fmt.Sprint(cfg.Queues)
	steps := [][]string{
		{"link", "add", v.IfA, "netns", v.A.Name, "numrxqueues", q, "numtxqueues", q,
			"type", "veth", "peer", "name", v.IfB, "netns", v.B.Name, "numrxqueues", q, "numtxqueues", q},
		{"-n", v.A.Name, "addr", "add", v.A4.String() + "/24", "dev", v.IfA},
		{"-n", v.B.Name, "addr", "add", v.B4.String() + "/24", "dev", v.IfB},
		{"-n", v.A.Name, "addr", "add", v.A6.String() + "/64", "dev", v.IfA, "nodad"},
		{"-n", v.B.Name, "addr", "add", v.B6.String() + "/64", "dev", v.IfB, "nodad"},
		{"-n", v.A.Name, "link", "set", "lo", "up"},
		{"-n", v.B.Name, "link", "set", "lo", "up"},
		{"-n", v.A.Name, "link", "set", v.IfA, "up"},
		{"-n", v.B.Name, "link", "set", v.IfB, "up"},
	}
	for _, s := range steps {
		if err := runIP(s...); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// RouteToB makes every address of p B's (a local route in B: a socket
// there bound to the unspecified address sends from and receives at any
// of them) and routes p from A through the link, as scripts/testbed.sh
// does for the load's client addresses. p must lie in 198.18.0.0/15.
func (v *Veth) RouteToB(t testing.TB, p netip.Prefix) {
	t.Helper()
	if !p.Addr().Is4() || !netip.MustParsePrefix("198.18.0.0/15").Contains(p.Addr()) || p.Bits() < 15 {
		t.Fatalf("batchiotest: RouteToB(%v): want a prefix within 198.18.0.0/15", p)
	}
	for _, s := range [][]string{
		{"-n", v.B.Name, "route", "add", "local", p.String(), "dev", "lo"},
		{"-n", v.A.Name, "route", "add", p.String(), "via", v.B4.String(), "dev", v.IfA},
	} {
		if err := runIP(s...); err != nil {
			t.Fatal(err)
		}
	}
	// Replies leave A by the link to sources that arrive on it: no
	// reverse path check in the way (the kernel socket's datagrams).
	err := v.A.In(func() error {
		for _, dev := range []string{"all", v.IfA} {
			if err := os.WriteFile(filepath.Join("/proc/sys/net/ipv4/conf", dev, "rp_filter"), []byte("0"), 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("batchiotest: rp_filter in %s: %v", v.A.Name, err)
	}
}

func runIP(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (n *Netns) add() error {
	if err := runIP("netns", "add", n.Name); err != nil {
		return err
	}
	fd, err := unix.Open(filepath.Join("/run/netns", n.Name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runIP("netns", "del", n.Name)
		return fmt.Errorf("open namespace %s: %w", n.Name, err)
	}
	n.fd = fd
	return nil
}

func (n *Netns) del() {
	if n.fd < 0 {
		return
	}
	unix.Close(n.fd)
	n.fd = -1
	runIP("netns", "del", n.Name)
}

func (v *Veth) close() {
	v.A.del()
	v.B.del()
}

// In runs f on an OS thread that has entered n and returns f's error. The
// thread stays locked and so ends with its goroutine: it never runs other
// code in n. f must not call t.Fatal (another goroutine).
func (n *Netns) In(f func() error) error {
	if n.fd < 0 {
		return errors.New("batchiotest: namespace " + n.Name + " is gone")
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("batchiotest: enter namespace %s: %w", n.Name, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// Listen opens a socket conn in n (batchio.Listen); the test's cleanup
// closes it.
func (n *Netns) Listen(t testing.TB, addr netip.AddrPort, cfg batchio.Config) batchio.Conn {
	t.Helper()
	var c batchio.Conn
	if err := n.In(func() (err error) { c, err = batchio.Listen(addr, cfg); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// XDPConfig is cfg with the AF_XDP path on IfA in native mode (veth
// runs XDP in its driver), and fewer UMEM frames than the default if cfg
// names none: 4,096 a socket, 8 MiB of locked memory, whose receive half
// holds about what a 1 MiB socket buffer does (a burst of 64 clients'
// redundant disconnect packets to a server between two reads).
func (v *Veth) XDPConfig(cfg batchio.Config) batchio.Config {
	cfg.XDP.Mode, cfg.XDP.Interface = batchio.XDPNative, v.IfA
	if cfg.XDP.Frames == 0 {
		cfg.XDP.Frames = 4096
	}
	return cfg
}

// ListenXDP opens n AF_XDP conns on addr in A (batchio.ListenGroup with
// XDPConfig(cfg)), one per receive queue of IfA; the test's cleanup
// closes them. Where the kernel cannot serve AF_XDP the test is skipped,
// or fails under CI (see Unavailable).
func (v *Veth) ListenXDP(t testing.TB, addr netip.AddrPort, n int, cfg batchio.Config) []batchio.Conn {
	t.Helper()
	var conns []batchio.Conn
	err := v.A.In(func() (err error) {
		conns, err = batchio.ListenGroup(addr, n, v.XDPConfig(cfg))
		return err
	})
	if err != nil {
		v.Unavailable(t, err)
	}
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	return conns
}

// Unavailable ends the test for err, a failure to open the AF_XDP path
// on the testbed: a skip, but a failure when CI=true, where the
// namespaces could be made and so AF_XDP is expected to work too; an
// error not wrapping batchio.ErrXDPUnsupported always fails.
func (v *Veth) Unavailable(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, batchio.ErrXDPUnsupported) || os.Getenv("CI") == "true" {
		t.Fatalf("AF_XDP on the veth testbed: %v", err)
	}
	t.Skipf("AF_XDP unavailable on the veth testbed: %v", err)
}

// XDPTraffic reports the datagrams conns (AF_XDP conns, or wrappers of
// them) received and sent through their rings rather than their kernel
// sockets, or fails the test if one of them is not on the AF_XDP path:
// a test over the testbed checks with it that the path carried its
// datagrams.
func XDPTraffic(t testing.TB, conns ...batchio.Conn) (rx, tx uint64) {
	t.Helper()
	for _, c := range conns {
		x, ok := batchio.As[batchio.XDPStatsReader](c)
		s, ok2 := batchio.As[batchio.StatsReader](c)
		if !ok || !ok2 {
			t.Fatalf("conn %v is not on the AF_XDP path", c.LocalAddr())
		}
		xs, st := x.XDPStats(), s.Stats()
		rx += st.RecvPackets - xs.KernelRx
		tx += st.SendPackets - xs.KernelTx
	}
	return rx, tx
}
