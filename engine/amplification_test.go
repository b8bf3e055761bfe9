package engine

import (
	"net/netip"
	"testing"

	"github.com/netcode-go/netcode/codec"
)

// Anti-amplification: a spoofed source address must not turn the server
// into a reflector. Every packet sent to an address that has not completed
// the handshake (challenge, denied) is smaller than the datagram that
// caused it, goes only to that datagram's source, and each datagram gets
// at most one reply.

// advAmpStep delivers one datagram and checks the replies it caused:
// at most one, only to from, smaller than pkt, a challenge or denied with
// the global sequence. It returns the replies (none or one).
func advAmpStep(t *testing.T, h *srvHarness, from netip.AddrPort, pkt []byte) [][]byte {
	t.Helper()
	h.deliver(0, from, pkt)
	out := h.conns[0].Sent()
	var got [][]byte
	if len(out) > 1 {
		t.Fatalf("one %d-byte datagram from %v caused %d replies", len(pkt), from, len(out))
	}
	for _, d := range out {
		if d.Addr != from {
			t.Fatalf("a datagram from %v caused a reply to %v", from, d.Addr)
		}
		if len(d.Data) >= len(pkt) {
			t.Fatalf("%d-byte reply to a %d-byte datagram", len(d.Data), len(pkt))
		}
		typ := codec.PacketType(d.Data[0] & 0x0f)
		if typ != codec.ConnectionChallenge && typ != codec.ConnectionDenied {
			t.Fatalf("%v sent to an address that has not completed the handshake", typ)
		}
		if srvSequence(d.Data) < 1<<63 {
			t.Fatalf("%v sent with sequence %d; want the global sequence", typ, srvSequence(d.Data))
		}
		got = append(got, d.Data)
	}
	return got
}

func TestAmplificationRepliesSmallerAndAtMostOnce(t *testing.T) {
	const repeats = 20
	for _, c := range []struct {
		name       string
		maxClients int
		// run sends datagrams through step and returns how many
		// challenges and denied packets it wants in total.
		run func(t *testing.T, h *srvHarness, step func(from netip.AddrPort, pkt []byte) [][]byte) (challenges, denied uint64)
	}{
		{"repeated requests", 4, func(t *testing.T, h *srvHarness, step func(netip.AddrPort, []byte) [][]byte) (uint64, uint64) {
			p := h.peer("192.0.2.1:5000", 1, nil)
			req := p.request()
			for range repeats {
				step(p.addr, req)
			}
			return repeats, 0
		}},
		{"requests from many addresses", 4, func(t *testing.T, h *srvHarness, step func(netip.AddrPort, []byte) [][]byte) (uint64, uint64) {
			for k := range 6 {
				p := h.peer(netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(k + 1)}), 5000).String(), uint64(k+1), nil)
				step(p.addr, p.request())
				step(p.addr, p.request())
			}
			return 12, 0
		}},
		{"full at request", 1, func(t *testing.T, h *srvHarness, step func(netip.AddrPort, []byte) [][]byte) (uint64, uint64) {
			h.peer("192.0.2.1:5000", 1, nil).connect()
			h.conns[0].Sent()
			p := h.peer("192.0.2.2:5000", 2, nil)
			req := p.request()
			for range repeats {
				step(p.addr, req)
			}
			return 1, repeats // the connected client's challenge, then denied
		}},
		{"full at response", 1, func(t *testing.T, h *srvHarness, step func(netip.AddrPort, []byte) [][]byte) (uint64, uint64) {
			a := h.peer("192.0.2.1:5000", 1, nil)
			b := h.peer("192.0.2.2:5000", 2, nil)
			for _, p := range []*srvPeer{a, b} {
				for _, raw := range step(p.addr, p.request()) {
					if _, err := p.decode(raw); err != nil {
						t.Fatal(err)
					}
				}
			}
			srvExpectTypes(t, "a's response", a.send(a.response()), codec.ConnectionKeepAlive)
			resp := b.response()
			for range repeats { // responses have no replay protection
				step(b.addr, resp)
			}
			return 2, repeats
		}},
		{"garbage and forgeries from strangers", 4, func(t *testing.T, h *srvHarness, step func(netip.AddrPort, []byte) [][]byte) (uint64, uint64) {
			p := h.peer("192.0.2.1:5000", 1, nil)
			stranger := netip.MustParseAddrPort("198.51.100.1:53")
			req := p.request()
			bad := append([]byte(nil), req...)
			bad[100] ^= 1
			for _, pkt := range [][]byte{bad, req[:len(req)-1], make([]byte, 1300), {0x13}, p.keepAlive(), p.response(), p.disconnect()} {
				step(stranger, pkt)
			}
			step(stranger, req) // a stolen valid token: one challenge
			thief := netip.MustParseAddrPort("198.51.100.2:53")
			for range repeats {
				step(thief, req) // then only silence for other addresses
			}
			return 1, 0
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newSrvHarness(t, ServerConfig{MaxClients: c.maxClients})
			requests, replies := map[netip.AddrPort]int{}, map[netip.AddrPort]int{}
			before := h.s.Stats()
			wantC, wantD := c.run(t, h, func(from netip.AddrPort, pkt []byte) [][]byte {
				t.Helper()
				got := advAmpStep(t, h, from, pkt)
				requests[from]++
				replies[from] += len(got)
				return got
			})
			for a, n := range replies {
				if n > requests[a] {
					t.Fatalf("%v: %d replies to %d datagrams", a, n, requests[a])
				}
			}
			st := h.s.Stats()
			if gc, gd := st.ChallengesSent-before.ChallengesSent, st.DeniedSent-before.DeniedSent; gc != wantC || gd != wantD {
				t.Fatalf("%d challenges, %d denied; want %d, %d", gc, gd, wantC, wantD)
			}
		})
	}
}
