//go:build linux

package batchio

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Tests of the AF_XDP path run in network namespaces they create, joined
// by a veth pair, with addresses from the benchmarking ranges only
// (198.18.0.0/15, and 2001:2::/48 for IPv6). The code under test runs in
// child processes, the test binary re-executed under `ip netns exec` with
// xdpChildEnv naming its role: a namespace is a property of a thread, and
// a child's sockets, netlink requests and /sys are all in its namespace.

const xdpChildEnv = "BATCHIO_XDP_CHILD"

var nsSeq atomic.Int32

// vethPair is two namespaces, A and B, joined by a veth pair.
type vethPair struct {
	nsA, nsB string
	ifA, ifB string
	a4, b4   netip.Addr
	a6, b6   netip.Addr
}

func runIP(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// newVethPair creates the namespaces and the link, or skips the test
// saying why it cannot. Cleanup deletes both namespaces (and with them
// the link).
func newVethPair(t testing.TB) *vethPair {
	t.Helper()
	if os.Getenv(xdpChildEnv) != "" {
		t.Skip("in a child")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip(8) (iproute2) to create network namespaces")
	}
	n := nsSeq.Add(1)
	id := fmt.Sprintf("%d%d", os.Getpid()%100000, n)
	p := &vethPair{
		nsA: "ncxdpA" + id, nsB: "ncxdpB" + id, ifA: "xa" + id, ifB: "xb" + id,
		a4: netip.MustParseAddr("198.18.0.1"), b4: netip.MustParseAddr("198.18.0.2"),
		a6: netip.MustParseAddr("2001:2::1"), b6: netip.MustParseAddr("2001:2::2"),
	}
	if err := runIP("netns", "add", p.nsA); err != nil {
		t.Skipf("cannot create a network namespace (needs root): %v", err)
	}
	t.Cleanup(func() { runIP("netns", "del", p.nsA) })
	if err := runIP("netns", "add", p.nsB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runIP("netns", "del", p.nsB) })
	steps := [][]string{
		// No duplicate address detection: a tentative link-local
		// address delays neighbour discovery by seconds.
		{"netns", "exec", p.nsA, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0"},
		{"netns", "exec", p.nsB, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0"},
		{"link", "add", p.ifA, "netns", p.nsA, "type", "veth", "peer", "name", p.ifB, "netns", p.nsB},
		{"-n", p.nsA, "addr", "add", p.a4.String() + "/24", "dev", p.ifA},
		{"-n", p.nsB, "addr", "add", p.b4.String() + "/24", "dev", p.ifB},
		{"-n", p.nsA, "addr", "add", p.a6.String() + "/64", "dev", p.ifA, "nodad"},
		{"-n", p.nsB, "addr", "add", p.b6.String() + "/64", "dev", p.ifB, "nodad"},
		{"-n", p.nsA, "link", "set", "lo", "up"},
		{"-n", p.nsB, "link", "set", "lo", "up"},
		{"-n", p.nsA, "link", "set", p.ifA, "up"},
		{"-n", p.nsB, "link", "set", p.ifB, "up"},
	}
	for _, s := range steps {
		if err := runIP(s...); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// child is a test binary running one role in a namespace.
type child struct {
	t     testing.TB
	cmd   *exec.Cmd
	lines chan string
	out   strings.Builder
	done  chan error
}

// startChild runs role in namespace ns with env (KEY=VALUE) and returns
// once it has started; its stdout lines arrive on lines.
func startChild(t testing.TB, ns, role string, env ...string) *child {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	args := []string{"netns", "exec", ns}
	for _, e := range env {
		// XDP_CPU pins the child to a core.
		if cpu, ok := strings.CutPrefix(e, "XDP_CPU="); ok && cpu != "" {
			args = append(args, "taskset", "-c", cpu)
		}
	}
	args = append(args, os.Args[0], "-test.run=^TestXDPChild$", "-test.v")
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Env = append(append(os.Environ(), xdpChildEnv+"="+role), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, cmd: cmd, lines: make(chan string, 64), done: make(chan error, 1)}
	cmd.Stderr = &c.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "XDP:") {
				c.lines <- strings.TrimPrefix(line, "XDP:")
			} else {
				c.out.WriteString(line + "\n")
			}
		}
		io.Copy(io.Discard, stdout)
		close(c.lines)
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-c.done
	})
	return c
}

// expect waits for the child's next line, which must start with prefix,
// and returns the rest.
func (c *child) expect(prefix string) string {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("child ended before %q: %s", prefix, c.out.String())
		}
		if !strings.HasPrefix(l, prefix) {
			c.t.Fatalf("child said %q, want %q...: %s", l, prefix, c.out.String())
		}
		return strings.TrimSpace(strings.TrimPrefix(l, prefix))
	case <-time.After(30 * time.Second):
		c.t.Fatalf("child silent, want %q: %s", prefix, c.out.String())
	}
	return ""
}

// wait waits for the child to exit and fails the test unless it passed.
func (c *child) wait() {
	c.t.Helper()
	for range c.lines {
	}
	select {
	case err := <-c.done:
		c.done <- err
		if err != nil {
			c.t.Fatalf("child: %v\n%s", err, c.out.String())
		}
	case <-time.After(60 * time.Second):
		c.t.Fatalf("child did not exit: %s", c.out.String())
	}
}

// say writes a line for the parent.
func say(format string, args ...any) {
	fmt.Printf("XDP:"+format+"\n", args...)
}

// childRoles are the roles a child can run, by name.
var childRoles = map[string]func(t *testing.T){}

// TestXDPChild is the entry of a child process; it does nothing in a
// normal run.
func TestXDPChild(t *testing.T) {
	role := os.Getenv(xdpChildEnv)
	if role == "" {
		t.Skip("only run as a child of the AF_XDP tests")
	}
	f, ok := childRoles[role]
	if !ok {
		t.Fatalf("unknown role %q", role)
	}
	f(t)
}
