package engine

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// TestAddrTableModel runs random puts and deletes against a Go map, with a
// hash that makes long collision runs (wrapping around the end of the
// array) so that backward-shift deletion is exercised.
func TestAddrTableModel(t *testing.T) {
	for _, c := range []struct {
		name string
		hash func(netip.AddrPort) uint64
	}{
		{"seeded", newAddrHash()},
		{"colliding", func(a netip.AddrPort) uint64 { return uint64(a.Port()%3) + 14 }}, // homes 14, 15, 16 of 16+
	} {
		t.Run(c.name, func(t *testing.T) {
			const limit = 8
			var tab oaTable[netip.AddrPort]
			tab.init(limit, c.hash)
			model := map[netip.AddrPort]int32{}
			rng := rand.New(rand.NewPCG(1, 2))
			addr := func() netip.AddrPort {
				return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(rng.IntN(4))}), uint16(rng.IntN(6)))
			}
			for step := range 20000 {
				k := addr()
				switch rng.IntN(3) {
				case 0, 1:
					v := int32(step)
					_, had := model[k]
					ok := tab.put(k, v)
					if want := had || len(model) < limit; ok != want {
						t.Fatalf("step %d: put(%v) = %v with %d keys, want %v", step, k, ok, len(model), want)
					}
					if ok {
						model[k] = v
					}
				case 2:
					_, had := model[k]
					if got := tab.del(k); got != had {
						t.Fatalf("step %d: del(%v) = %v, want %v", step, k, got, had)
					}
					delete(model, k)
				}
				if tab.len() != len(model) {
					t.Fatalf("step %d: len %d, want %d", step, tab.len(), len(model))
				}
				for mk, mv := range model {
					if v, ok := tab.get(mk); !ok || v != mv {
						t.Fatalf("step %d: get(%v) = %d, %v; want %d", step, mk, v, ok, mv)
					}
				}
			}
		})
	}
}

func TestAddrTableIPv6AndClear(t *testing.T) {
	var tab oaTable[netip.AddrPort]
	tab.init(100, newAddrHash())
	for i := range 100 {
		a := netip.MustParseAddrPort(fmt.Sprintf("[2001:db8::%x]:%d", i, 1000+i))
		if !tab.put(a, int32(i)) {
			t.Fatalf("put %d failed", i)
		}
	}
	if tab.put(netip.MustParseAddrPort("192.0.2.1:1"), 0) {
		t.Fatal("put beyond the limit succeeded")
	}
	v4 := netip.MustParseAddrPort("192.0.2.1:1")
	mapped := netip.AddrPortFrom(netip.AddrFrom16(v4.Addr().As16()), 1)
	tab.clear()
	tab.put(v4, 1)
	if _, ok := tab.get(mapped); ok {
		t.Fatal("IPv4-mapped IPv6 address found as its IPv4 form: keys must compare exactly")
	}
	if allocs := testing.AllocsPerRun(1000, func() { tab.get(v4) }); allocs != 0 {
		t.Fatalf("get allocates %v times", allocs)
	}
}
