//go:build linux

package batchio

import (
	"net/netip"
	"testing"
)

// The receiving sockets here are bound to the wildcard address (that is
// what lets one socket answer for many local addresses), on an ephemeral
// port; every datagram stays on loopback.

// listenPacketInfo opens a wildcard IPv4 socket with PacketInfo (and the
// rest of cfg) and a plain peer on 127.0.0.1; cleanup closes both.
func listenPacketInfo(t *testing.T, cfg Config) (mux, peer *mmsgConn) {
	t.Helper()
	cfg.PacketInfo = true
	mux, err := listenMmsg(netip.MustParseAddrPort("0.0.0.0:0"), cfg)
	if err != nil {
		t.Skipf("wildcard socket: %v", err)
	}
	t.Cleanup(func() { mux.Close() })
	if peer, err = listenMmsg(netip.MustParseAddrPort("127.0.0.1:0"), Config{DisableGSO: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	return mux, peer
}

func TestPacketInfoLocalAddresses(t *testing.T) {
	for _, mode := range waitModes {
		t.Run(mode.String(), func(t *testing.T) {
			mux, peer := listenPacketInfo(t, Config{BlockingWait: bool(mode), BatchSize: 4, DisableGSO: true})
			port := mux.LocalAddr().Port()

			// Inbound: the mux learns which of its addresses each datagram was for.
			dsts := []string{"127.0.0.2", "127.0.0.3", "127.1.2.3", "127.0.0.1", "127.9.8.7"}
			out := makeMsgs(len(dsts), 8)
			for i, d := range dsts {
				out[i].N = 1 + i
				out[i].Addr = netip.AddrPortFrom(netip.MustParseAddr(d), port)
			}
			if n, err := peer.WriteBatch(out); n != len(out) || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			got := readAll(t, mux, makeMsgs(4, 64), len(dsts))
			if len(got) != len(dsts) {
				t.Fatalf("received %d of %d", len(got), len(dsts))
			}
			for i, m := range got {
				if m.Local != netip.MustParseAddr(dsts[m.N-1]) || m.N != i+1 {
					t.Errorf("datagram %d (len %d): local %v, want %v", i, m.N, m.Local, dsts[i])
				}
				if m.Addr != peer.LocalAddr() {
					t.Errorf("datagram %d: source %v, want %v", i, m.Addr, peer.LocalAddr())
				}
			}

			// Outbound: each reply leaves from the address it names; a zero
			// Local lets the kernel choose (127.0.0.1 towards 127.0.0.1).
			srcs := []netip.Addr{netip.MustParseAddr("127.0.0.5"), {}, netip.MustParseAddr("127.200.0.9"), netip.MustParseAddr("::1")}
			want := []netip.Addr{srcs[0], netip.MustParseAddr("127.0.0.1"), srcs[2], netip.MustParseAddr("127.0.0.1")}
			back := makeMsgs(len(srcs), 8)
			for i, s := range srcs {
				back[i].N = 1 + i
				back[i].Addr = peer.LocalAddr()
				back[i].Local = s
			}
			if n, err := mux.WriteBatch(back); n != len(back) || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			got = readAll(t, peer, makeMsgs(8, 64), len(back))
			if len(got) != len(back) {
				t.Fatalf("peer received %d of %d", len(got), len(back))
			}
			for i, m := range got {
				if m.Addr != netip.AddrPortFrom(want[i], port) {
					t.Errorf("reply %d: source %v, want %v", i, m.Addr, netip.AddrPortFrom(want[i], port))
				}
				if m.Local.IsValid() {
					t.Errorf("reply %d: a conn without PacketInfo reported local %v", i, m.Local)
				}
			}
		})
	}
}

func TestPacketInfoIPv6(t *testing.T) {
	mux, err := listenMmsg(netip.MustParseAddrPort("[::]:0"), Config{PacketInfo: true, DisableGSO: true})
	if err != nil {
		t.Skipf("IPv6 wildcard socket: %v", err)
	}
	defer mux.Close()
	peer, err := listenMmsg(netip.MustParseAddrPort("[::1]:0"), Config{DisableGSO: true})
	if err != nil {
		t.Skipf("IPv6 loopback: %v", err)
	}
	defer peer.Close()
	out := []Message{{Buf: []byte("hi"), N: 2, Addr: netip.AddrPortFrom(netip.IPv6Loopback(), mux.LocalAddr().Port())}}
	if n, err := peer.WriteBatch(out); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	got := readAll(t, mux, makeMsgs(2, 16), 1)
	if len(got) != 1 || got[0].Local != netip.IPv6Loopback() {
		t.Fatalf("got %+v, want one datagram for ::1", got)
	}
	back := []Message{{Buf: []byte("ok"), N: 2, Addr: peer.LocalAddr(), Local: netip.IPv6Loopback()}}
	if n, err := mux.WriteBatch(back); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	got = readAll(t, peer, makeMsgs(2, 16), 1)
	if len(got) != 1 || got[0].Addr != netip.AddrPortFrom(netip.IPv6Loopback(), mux.LocalAddr().Port()) {
		t.Fatalf("got %+v, want one reply from [::1]:%d", got, mux.LocalAddr().Port())
	}
}

func TestPacketInfoAllocs(t *testing.T) {
	mux, peer := listenPacketInfo(t, Config{DisableGSO: true})
	const burst = 16
	out := makeMsgs(burst, 100)
	for i := range out {
		out[i].N = 100
		out[i].Addr = peer.LocalAddr()
		out[i].Local = netip.AddrFrom4([4]byte{127, 0, 1, byte(1 + i)})
	}
	in := makeMsgs(burst, 1500)
	allocs := testing.AllocsPerRun(50, func() {
		if n, _ := mux.WriteBatch(out); n != burst {
			t.Fatalf("sent %d", n)
		}
		for got := 0; got < burst; {
			n, err := peer.ReadBatch(in[:burst-got])
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
		// And back to the mux, which parses the control messages.
		for i := range in[:burst] {
			in[i].Addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 2, byte(1 + i)}), mux.LocalAddr().Port())
		}
		if n, _ := peer.WriteBatch(in[:burst]); n != burst {
			t.Fatalf("sent back %d", n)
		}
		for got := 0; got < burst; {
			n, err := mux.ReadBatch(in[:burst-got])
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per round trip with packet info; want 0", allocs)
	}
}
