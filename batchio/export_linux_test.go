//go:build linux

package batchio

import (
	"net/netip"
	"syscall"
	"testing"
)

// For the external tests of the AF_XDP path (engine end to end): the
// namespace pair and the child processes.

type TestVeth struct {
	NsA, NsB, IfA, IfB string
	A4, B4, A6, B6     netip.Addr
}

func NewTestVeth(t *testing.T) TestVeth {
	p := newVethPair(t)
	return TestVeth{p.nsA, p.nsB, p.ifA, p.ifB, p.a4, p.b4, p.a6, p.b6}
}

// RegisterChildRole adds a role a child process can run (from an init).
func RegisterChildRole(name string, f func(t *testing.T)) { childRoles[name] = f }

type TestChild struct{ c *child }

func StartTestChild(t *testing.T, ns, role string, env ...string) TestChild {
	return TestChild{startChild(t, ns, role, env...)}
}
func (c TestChild) Expect(prefix string) string { return c.c.expect(prefix) }
func (c TestChild) Wait()                       { c.c.wait() }

// Say writes a line a parent's Expect reads.
func Say(format string, args ...any) { say(format, args...) }

// SetXDPSendto makes an AF_XDP conn's kicks call f instead of the kernel
// (nil: the kernel again); only while the conn is not in use.
func SetXDPSendto(c Conn, f func() syscall.Errno) { c.(*xdpConn).x.sendto = f }
