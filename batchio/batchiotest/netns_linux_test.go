//go:build linux

package batchiotest_test

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
)

// TestVeth: conns opened in B reach conns opened in A over the link, both
// families, from the test's own goroutine; each namespace has its end of
// the link and not the other's; cleanup removes both namespaces.
func TestVeth(t *testing.T) {
	var names []string
	t.Run("testbed", func(t *testing.T) {
		v := batchiotest.NewVeth(t, batchiotest.VethConfig{Queues: 2})
		names = []string{v.A.Name, v.B.Name}
		for _, ns := range []struct {
			n        *batchiotest.Netns
			has, not string
		}{{v.A, v.IfA, v.IfB}, {v.B, v.IfB, v.IfA}} {
			err := ns.n.In(func() error {
				if _, err := net.InterfaceByName(ns.has); err != nil {
					return err
				}
				if _, err := net.InterfaceByName(ns.not); err == nil {
					t.Errorf("%s sees %s", ns.n.Name, ns.not)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, ips := range [][2]netip.Addr{{v.A4, v.B4}, {v.A6, v.B6}} {
			a := v.A.Listen(t, netip.AddrPortFrom(ips[0], 0), batchio.Config{})
			b := v.B.Listen(t, netip.AddrPortFrom(ips[1], 0), batchio.Config{})
			out := []batchio.Message{{Buf: []byte("ping"), N: 4, Addr: a.LocalAddr()}}
			if n, err := b.WriteBatch(out); n != 1 || err != nil {
				t.Fatalf("WriteBatch: %d, %v", n, err)
			}
			in := []batchio.Message{{Buf: make([]byte, 16)}}
			for deadline := time.Now().Add(5 * time.Second); ; {
				n, err := a.ReadBatch(in)
				if err != nil {
					t.Fatal(err)
				}
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%v got nothing from %v", a.LocalAddr(), b.LocalAddr())
				}
				a.WaitRead(time.Now().Add(10 * time.Millisecond))
			}
			if string(in[0].Buf[:in[0].N]) != "ping" || in[0].Addr != b.LocalAddr() {
				t.Fatalf("got %q from %v", in[0].Buf[:in[0].N], in[0].Addr)
			}
		}
	})
	for _, n := range names {
		if _, err := os.Stat(filepath.Join("/run/netns", n)); !os.IsNotExist(err) {
			t.Errorf("namespace %s left after cleanup (%v)", n, err)
		}
	}
}
