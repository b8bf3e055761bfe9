package batchio

import (
	"net/netip"
	"testing"
)

// TestMACTable: addresses of both families are kept apart (an IPv4
// address and its IPv4-mapped IPv6 form are different peers), a changed
// link-layer address replaces the old, and the table stays within its
// limit.
func TestMACTable(t *testing.T) {
	tab := newMACTable(4)
	v4 := netip.MustParseAddr("198.18.0.2")
	mapped := netip.AddrFrom16(v4.As16())
	v6 := netip.MustParseAddr("2001:2::2")
	a, b, c := [6]byte{1}, [6]byte{2}, [6]byte{3}
	tab.learn(v4, &a)
	tab.learn(mapped, &b)
	tab.learn(v6, &c)
	for _, w := range []struct {
		ip  netip.Addr
		mac [6]byte
	}{{v4, a}, {mapped, b}, {v6, c}} {
		if got, ok := tab.get(w.ip); !ok || got != w.mac {
			t.Errorf("get(%v) = %v, %v; want %v", w.ip, got, ok, w.mac)
		}
	}
	tab.learn(v4, &c)
	if got, _ := tab.get(v4); got != c {
		t.Errorf("after a change, get(%v) = %v; want %v", v4, got, c)
	}
	for i := range 10 {
		tab.learn(netip.AddrFrom4([4]byte{198, 19, 0, byte(i)}), &a)
		if tab.len() > 4 {
			t.Fatalf("%d entries; limit 4", tab.len())
		}
	}
	if _, ok := tab.get(netip.MustParseAddr("198.18.9.9")); ok {
		t.Error("an address never learned was found")
	}
}

// BenchmarkMACTable compares the table with a map keyed by netip.Addr
// over 2,048 IPv4 peers, one learn and one lookup per datagram pair as
// the AF_XDP path does.
func BenchmarkMACTable(b *testing.B) {
	const peers = 2048
	addrs := make([]netip.Addr, peers)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{198, 19, byte(i >> 8), byte(i)})
	}
	mac := [6]byte{2, 0, 0, 0, 0, 1}
	b.Run("table", func(b *testing.B) {
		tab := newMACTable(maxMACs)
		for i := 0; b.Loop(); i++ {
			a := addrs[i%peers]
			tab.learn(a, &mac)
			if _, ok := tab.get(a); !ok {
				b.Fatal("lost")
			}
		}
	})
	b.Run("netip-map", func(b *testing.B) {
		m := make(map[netip.Addr][6]byte)
		for i := 0; b.Loop(); i++ {
			a := addrs[i%peers]
			if old, ok := m[a]; !ok || old != mac {
				m[a] = mac
			}
			if _, ok := m[a]; !ok {
				b.Fatal("lost")
			}
		}
	})
}
