//go:build linux

package batchio

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// listenWaitAny opens a pair of sockets for WaitAny, an IPv4 and an IPv6
// one when the system has IPv6, and a sender.
func listenWaitAny(t *testing.T, cfg Config) (socks []*mmsgConn, sender *mmsgConn) {
	t.Helper()
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "127.0.0.1:0"} {
		c, err := listenMmsg(netip.MustParseAddrPort(addr), cfg)
		if err != nil {
			t.Logf("%v: %v", addr, err) // no IPv6 loopback
			continue
		}
		t.Cleanup(func() { c.Close() })
		socks = append(socks, c)
	}
	return socks[:len(socks)-1], socks[len(socks)-1]
}

func conns(socks []*mmsgConn) []Conn {
	out := make([]Conn, len(socks))
	for i, s := range socks {
		out[i] = s
	}
	return out
}

func TestWaitAnyArguments(t *testing.T) {
	if err := WaitAny(time.Time{}); err == nil {
		t.Error("no conns accepted")
	}
	one := &stubConn{}
	if err := WaitAny(time.Now().Add(time.Hour), one); err != nil || one.waits != 1 {
		t.Errorf("one conn: %v, %d WaitRead calls; want its WaitRead", err, one.waits)
	}
	socks, _ := listenWaitAny(t, Config{})
	err := WaitAny(time.Now().Add(time.Hour), socks[0], &stubConn{})
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "conn 1") {
		t.Errorf("a socket and a stub: %v; want ErrUnsupported naming conn 1", err)
	}
}

// TestWaitAny: a datagram on any of the sockets ends the wait, so does
// the deadline, a Wake or a Close; wrappers are looked through.
func TestWaitAny(t *testing.T) {
	for _, mode := range waitModes {
		t.Run(mode.String(), func(t *testing.T) {
			socks, sender := listenWaitAny(t, Config{BlockingWait: bool(mode)})
			all := conns(socks)
			all[0] = &wrapConn{Conn: socks[0], inner: socks[0]}

			start := time.Now()
			if err := WaitAny(start.Add(30*time.Millisecond), all...); err != nil {
				t.Fatal(err)
			}
			if waited := time.Since(start); waited < 25*time.Millisecond {
				t.Fatalf("returned after %v with nothing to read, before the deadline", waited)
			}
			for i, s := range socks {
				to := s.LocalAddr()
				if to.Addr().Is6() {
					// The sender is IPv4: reach the IPv6 socket from itself.
					sender = s
				}
				msg := []Message{{Buf: []byte{byte(i)}, N: 1, Addr: to}}
				if n, err := sender.WriteBatch(msg); n != 1 || err != nil {
					t.Fatalf("send to %v: %d, %v", to, n, err)
				}
				start := time.Now()
				if err := WaitAny(start.Add(5*time.Second), all...); err != nil {
					t.Fatal(err)
				}
				if waited := time.Since(start); waited > 2*time.Second {
					t.Fatalf("datagram on socket %d noticed after %v", i, waited)
				}
				if n, _ := s.ReadBatch(makeMsgs(1, 8)); n != 1 {
					t.Fatalf("socket %d: read %d", i, n)
				}
			}

			// Wake, from another goroutine, ends the wait: at once for a
			// BlockingWait socket, within a poll slice otherwise.
			done := make(chan error, 1)
			go func() { done <- WaitAny(time.Now().Add(10*time.Second), all...) }()
			time.Sleep(10 * time.Millisecond)
			socks[len(socks)-1].Wake()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Wake did not end WaitAny")
			}

			go func() { done <- WaitAny(time.Time{}, all...) }()
			time.Sleep(10 * time.Millisecond)
			socks[0].Close()
			select {
			case err := <-done:
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("WaitAny after Close = %v", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Close did not end WaitAny")
			}
		})
	}
}

// TestWaitAnyAllocs: parking on several sockets allocates nothing once
// the first call has made its state.
func TestWaitAnyAllocs(t *testing.T) {
	for _, mode := range waitModes {
		socks, _ := listenWaitAny(t, Config{BlockingWait: bool(mode)})
		all := conns(socks)
		wait := func() {
			socks[0].Wake()
			if err := WaitAny(time.Now().Add(time.Second), all...); err != nil {
				t.Fatal(err)
			}
			if err := WaitAny(time.Now().Add(time.Microsecond), all...); err != nil {
				t.Fatal(err)
			}
		}
		wait()
		if n := testing.AllocsPerRun(50, wait); n != 0 {
			t.Errorf("%v: %v allocations per woken and timed-out WaitAny", mode, n)
		}
	}
}
