//go:build linux

package batchio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func closeConns(conns []Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// TestParseProcNet reads rows as the kernel prints them on this machine.
func TestParseProcNet(t *testing.T) {
	word := func(b ...byte) string { return fmt.Sprintf("%08X", binary.NativeEndian.Uint32(b)) }
	v4 := "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n" +
		"   28: " + word(127, 0, 0, 1) + ":9C40 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 22451 2 0000000016794454 0\n" +
		"  169: 00000000:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 7 2 00000000398409a7 0\n"
	got, err := parseProcNet(strings.NewReader(v4), false)
	if err != nil {
		t.Fatal(err)
	}
	want := []procSocket{{netip.MustParseAddrPort("127.0.0.1:40000"), 22451}, {netip.MustParseAddrPort("0.0.0.0:53"), 7}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("IPv4: %v; want %v", got, want)
	}
	v6 := "  sl  local_address                         remote_address                        st ...\n" +
		"    1: 00000000000000000000000000000000:9C40 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 99 2 0 0\n" +
		"    2: 000000000000000000000000" + word(0, 0, 0, 1) + ":0050 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 100 2 0 0\n"
	got, err = parseProcNet(strings.NewReader(v6), true)
	if err != nil {
		t.Fatal(err)
	}
	want = []procSocket{{netip.MustParseAddrPort("[::]:40000"), 99}, {netip.MustParseAddrPort("[::1]:80"), 100}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("IPv6: %v; want %v", got, want)
	}
	for _, bad := range []string{"h\n 1: 0100007F 0 07 0 0 0 0 0 1\n", "h\n 1: 0100007F:ZZ 0 0 0 0 0 0 0 1\n", "h\n 1: 0100007F:0050 0 0 0 0 0 0 0 x\n", "h\n 1: 2\n"} {
		if _, err := parseProcNet(strings.NewReader(bad), false); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestListenGroupRefusesSecond: a second multi-socket group on a served
// address, or on the wildcard of its port, fails naming the address; the
// first keeps its sockets and serves.
func TestListenGroupRefusesSecond(t *testing.T) {
	for _, loop := range []string{"127.0.0.1", "::1"} {
		first, err := ListenGroup(netip.AddrPortFrom(netip.MustParseAddr(loop), 0), 3, Config{})
		if err != nil {
			if loop == "::1" {
				t.Logf("no IPv6 loopback: %v", err)
				continue
			}
			t.Fatal(err)
		}
		defer closeConns(first)
		addr := first[0].LocalAddr()
		for _, c := range first[1:] {
			if c.LocalAddr() != addr {
				t.Fatalf("group sockets on %v and %v", addr, c.LocalAddr())
			}
		}
		wild := netip.IPv4Unspecified()
		if addr.Addr().Is6() {
			wild = netip.IPv6Unspecified()
		}
		for _, second := range []netip.AddrPort{addr, netip.AddrPortFrom(wild, addr.Port())} {
			for _, n := range []int{1, 2} {
				conns, err := ListenGroup(second, n, Config{})
				if err == nil {
					closeConns(conns)
					t.Fatalf("a second group of %d on %v bound", n, second)
				}
				if n > 1 && !errors.Is(err, ErrAddrServed) || !strings.Contains(err.Error(), second.String()) {
					t.Errorf("second group of %d on %v: %v; want ErrAddrServed naming the address", n, second, err)
				}
			}
		}
		// The first group still receives.
		send, err := Listen(netip.AddrPortFrom(addr.Addr(), 0), Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer send.Close()
		out := []Message{{Buf: []byte("still here"), N: 10, Addr: addr}}
		if n, err := send.WriteBatch(out); n != 1 || err != nil {
			t.Fatalf("send: %d %v", n, err)
		}
		if !receivedByAny(t, first) {
			t.Errorf("%v: the first group received nothing after the refused join", addr)
		}
	}
}

// receivedByAny reports whether a datagram reaches one of conns within a
// second.
func receivedByAny(t *testing.T, conns []Conn) bool {
	msgs := makeMsgs(1, 64)
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		for _, c := range conns {
			n, err := c.ReadBatch(msgs)
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				return true
			}
		}
		if err := WaitAny(deadline, conns...); err != nil {
			t.Fatal(err)
		}
	}
	return false
}

// TestCheckAloneSeesJoiner: a socket that joined the group after the
// probe (two servers starting at once) is found by the socket-table scan.
func TestCheckAloneSeesJoiner(t *testing.T) {
	group, err := ListenGroup(netip.MustParseAddrPort("127.0.0.1:0"), 2, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeConns(group)
	if err := checkAlone(group); err != nil {
		t.Fatalf("own group: %v", err)
	}
	joiner, err := Listen(group[0].LocalAddr(), Config{ReusePort: true})
	if err != nil {
		t.Fatal(err)
	}
	defer joiner.Close()
	if err := checkAlone(group); !errors.Is(err, ErrAddrServed) || !strings.Contains(err.Error(), group[0].LocalAddr().String()) {
		t.Errorf("with a joiner: %v; want ErrAddrServed naming %v", err, group[0].LocalAddr())
	}
	if err := checkAlone([]Conn{joiner}); !errors.Is(err, ErrAddrServed) {
		t.Errorf("the joiner's view: %v; want ErrAddrServed", err)
	}
	if err := checkAlone(append(group[:2:2], joiner)); err != nil {
		t.Errorf("all three as one group: %v", err)
	}
}

// groupChildEnv makes the test binary a child that holds a group.
const groupChildEnv = "BATCHIO_TEST_GROUP_CHILD"

// TestGroupChild is the child's body: it binds a group of two on the
// address in its environment, prints the address and waits for stdin to
// close (or 30 s), so the parent can kill it with its sockets open.
func TestGroupChild(t *testing.T) {
	addr := os.Getenv(groupChildEnv)
	if addr == "" {
		t.Skip("the child process of TestListenGroupAcrossProcesses")
	}
	conns, err := ListenGroup(netip.MustParseAddrPort(addr), 2, Config{})
	if err != nil {
		fmt.Println("error", err)
		return
	}
	fmt.Println("bound", conns[0].LocalAddr())
	done := make(chan struct{})
	go func() { bufio.NewReader(os.Stdin).ReadString('\n'); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
}

// TestListenGroupAcrossProcesses: a group held by another process is
// refused; once that process is killed (SIGKILL, no clean-up) the
// address binds again at once, as for a restart after a crash.
func TestListenGroupAcrossProcesses(t *testing.T) {
	if os.Getenv(groupChildEnv) != "" {
		t.Skip("in the child")
	}
	child := exec.Command(os.Args[0], "-test.run=^TestGroupChild$", "-test.count=1")
	child.Env = append(os.Environ(), groupChildEnv+"=127.0.0.1:0")
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			child.Process.Kill()
			child.Wait()
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("child: %q %v", line, err)
	}
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "bound" {
		t.Fatalf("child: %q", line)
	}
	addr := netip.MustParseAddrPort(f[1])
	if conns, err := ListenGroup(addr, 2, Config{}); !errors.Is(err, ErrAddrServed) {
		closeConns(conns)
		t.Fatalf("while the child serves %v: %v; want ErrAddrServed", addr, err)
	}
	child.Process.Kill() // SIGKILL: the child closes nothing itself
	child.Wait()
	killed = true
	conns, err := ListenGroup(addr, 2, Config{})
	if err != nil {
		t.Fatalf("after the child was killed: %v", err)
	}
	closeConns(conns)
}

// TestListenGroupBothFamilies: a server's IPv4 and IPv6 groups on one
// port are no conflict (the IPv6 sockets and the probe are IPv6-only).
func TestListenGroupBothFamilies(t *testing.T) {
	v4, err := ListenGroup(netip.MustParseAddrPort("127.0.0.1:0"), 2, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeConns(v4)
	port := v4[0].LocalAddr().Port()
	v6, err := ListenGroup(netip.AddrPortFrom(netip.IPv6Loopback(), port), 2, Config{})
	if err != nil {
		if errors.Is(err, ErrAddrServed) {
			t.Fatalf("the IPv6 group on port %d: %v", port, err)
		}
		t.Skipf("no IPv6 loopback: %v", err)
	}
	closeConns(v6)
}

// TestListenGroupConcurrent: two groups binding one free port at the same
// moment never both succeed (one, or neither: it fails closed).
func TestListenGroupConcurrent(t *testing.T) {
	both, one, none := 0, 0, 0
	for range 40 {
		probe, err := ListenGroup(netip.MustParseAddrPort("127.0.0.1:0"), 1, Config{})
		if err != nil {
			t.Fatal(err)
		}
		addr := probe[0].LocalAddr()
		closeConns(probe)
		results := make(chan []Conn, 2)
		start := make(chan struct{})
		for range 2 {
			go func() {
				<-start
				conns, err := ListenGroup(addr, 2, Config{})
				if err != nil && !errors.Is(err, ErrAddrServed) && !errors.Is(err, unix.EADDRINUSE) {
					t.Errorf("%v: %v", addr, err)
				}
				results <- conns
			}()
		}
		close(start)
		a, b := <-results, <-results
		switch {
		case a != nil && b != nil:
			both++
		case a != nil || b != nil:
			one++
		default:
			none++
		}
		closeConns(a)
		closeConns(b)
	}
	t.Logf("40 races: %d with one group bound, %d with none", one, none)
	if both != 0 {
		t.Errorf("%d of 40 races bound both groups", both)
	}
}
