//go:build linux

package batchio

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UDP GSO: WriteBatch hands runs of datagrams to the kernel as one header
// with a UDP_SEGMENT size; the receiving sockets here do not ask for GRO,
// so the kernel splits every run back into the datagrams it was made of.

// listenGSO opens a GSO socket on loopback, skipping the test where the
// kernel has no UDP_SEGMENT.
func listenGSO(t *testing.T, addr string, cfg Config) *mmsgConn {
	t.Helper()
	cfg.DisableGSO = false
	c, err := listenMmsg(netip.MustParseAddrPort(addr), cfg)
	if err != nil {
		t.Skipf("cannot listen on %v: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	if !c.gso.Load() {
		t.Skip("kernel without UDP GSO (UDP_SEGMENT)")
	}
	return c
}

// listenPeers opens count plain receivers on the loopback address of addr.
func listenPeers(t *testing.T, addr string, count int) []*mmsgConn {
	t.Helper()
	peers := make([]*mmsgConn, count)
	for i := range peers {
		c, err := listenMmsg(netip.MustParseAddrPort(addr), Config{DisableGSO: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		peers[i] = c
	}
	return peers
}

// send describes one outgoing datagram of a test: its length and which
// peer it goes to.
type send struct{ size, to int }

// indexed builds the messages for sends: datagram i is filled with byte i
// (so its index survives a run being cut anywhere) and goes to its peer.
func indexed(sends []send, peers []*mmsgConn) []Message {
	out := make([]Message, len(sends))
	for i, s := range sends {
		out[i] = Message{Buf: bytes.Repeat([]byte{byte(i)}, max(s.size, 1)), N: s.size, Addr: peers[s.to].LocalAddr()}
	}
	return out
}

// equalSends returns count sends of size bytes; runs of run datagrams go
// to the peers in turn.
func equalSends(count, size, run, peers int) []send {
	out := make([]send, count)
	for i := range out {
		out[i] = send{size: size, to: (i / run) % peers}
	}
	return out
}

// expectArrivals reads what every peer has and checks that it received,
// in order and intact, exactly the datagrams of out addressed to it whose
// index is not in lost, and nothing more.
func expectArrivals(t *testing.T, peers []*mmsgConn, out []Message, lost ...int) {
	t.Helper()
	for p, peer := range peers {
		var want []int
		for i, m := range out {
			if m.Addr == peer.LocalAddr() && !slices.Contains(lost, i) {
				want = append(want, i)
			}
		}
		var got []int
		for _, m := range readAll(t, peer, makeMsgs(16, 1<<16), len(want)) {
			i := int(m.Buf[0])
			if i >= len(out) || !bytes.Equal(m.Buf, out[i].Buf[:out[i].N]) {
				t.Fatalf("peer %d: datagram of %d bytes starting %d matches nothing sent", p, m.N, m.Buf[0])
			}
			got = append(got, i)
		}
		if n, err := peer.ReadBatch(makeMsgs(16, 1<<16)); n != 0 || err != nil {
			t.Fatalf("peer %d: %d more datagrams than expected (err %v)", p, n, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("peer %d received %v, want %v", p, got, want)
		}
	}
}

func TestGSOEqualRunArrivesAsDatagrams(t *testing.T) {
	for _, family := range []string{"127.0.0.1:0", "[::1]:0"} {
		for _, mode := range waitModes {
			t.Run(fmt.Sprintf("%s/%v", family, mode), func(t *testing.T) {
				a := listenGSO(t, family, Config{BlockingWait: bool(mode), DisableGSO: true})
				peers := listenPeers(t, family, 1)
				const count = 40
				out := indexed(equalSends(count, 100, count, 1), peers)
				if n, err := a.WriteBatch(out); n != count || err != nil {
					t.Fatalf("WriteBatch = %d, %v", n, err)
				}
				expectArrivals(t, peers, out)
				if s := a.Stats(); s.SendCalls != 1 || s.SendPackets != count || s.GSOBatches != 1 || s.SendDropped != 0 {
					t.Fatalf("stats %+v; want 1 call, 1 GSO batch, %d datagrams", s, count)
				}
			})
		}
	}
}

// TestGSORuns checks where runs are cut: the headers the first round
// prepares (datagrams per header), then that everything arrives.
func TestGSORuns(t *testing.T) {
	s := func(size, to int) send { return send{size, to} }
	repeat := func(count int, x send) []send { return slices.Repeat([]send{x}, count) }
	for _, tc := range []struct {
		name    string
		batch   int
		sends   []send
		headers []int // datagrams per header, first round
		calls   uint64
		batches uint64
	}{
		{"shorter last", 0, []send{s(100, 0), s(100, 0), s(100, 0), s(40, 0)}, []int{4}, 1, 1},
		{"shorter ends run", 0, []send{s(100, 0), s(100, 0), s(40, 0), s(100, 0), s(100, 0)}, []int{3, 2}, 1, 2},
		{"longer ends run", 0, []send{s(100, 0), s(100, 0), s(150, 0), s(150, 0), s(150, 0)}, []int{2, 3}, 1, 2},
		{"alone", 0, []send{s(100, 0)}, []int{1}, 1, 0},
		{"growing", 0, []send{s(10, 0), s(20, 0), s(30, 0)}, []int{1, 1, 1}, 1, 0},
		{"addresses", 0, []send{s(100, 0), s(100, 0), s(100, 1), s(100, 1), s(100, 0)}, []int{2, 2, 1}, 1, 2},
		{"more than 64", 128, repeat(100, s(64, 0)), []int{64, 36}, 1, 2},
		{"more than a batch", 0, repeat(100, s(64, 0)), []int{64}, 2, 2},
		{"1200 bytes", 0, repeat(64, s(1200, 0)), []int{54, 10}, 1, 2},
		{"65000 bytes", 0, repeat(3, s(32500, 0)), []int{2, 1}, 1, 1},
		{"one over 65000", 0, repeat(3, s(32501, 0)), []int{1, 1, 1}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := listenGSO(t, "127.0.0.1:0", Config{BatchSize: tc.batch, DisableGSO: true})
			peers := listenPeers(t, "127.0.0.1:0", 2)
			out := indexed(tc.sends, peers)
			n, headers := a.prepare(out, 0)
			if got := a.wsegs[:headers]; !slices.Equal(got, tc.headers) || n != min(len(out), a.batch) {
				t.Fatalf("prepared %d datagrams as %v, want %v", n, got, tc.headers)
			}
			if n, err := a.WriteBatch(out); n != len(out) || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			expectArrivals(t, peers, out)
			if st := a.Stats(); st.SendCalls != tc.calls || st.GSOBatches != tc.batches || st.SendPackets != uint64(len(out)) {
				t.Fatalf("stats %+v; want %d calls, %d GSO batches", st, tc.calls, tc.batches)
			}
		})
	}
}

// TestGSORunsAroundUnsendable: a message that cannot be sent ends the run
// before it and is dropped alone; Local does not split runs without
// PacketInfo, since it is not sent.
func TestGSORunsAroundUnsendable(t *testing.T) {
	a := listenGSO(t, "127.0.0.1:0", Config{DisableGSO: true})
	peers := listenPeers(t, "127.0.0.1:0", 1)
	out := indexed(slices.Repeat([]send{{50, 0}}, 6), peers)
	out[2].N = 0
	out[4].Local = netip.MustParseAddr("127.0.0.9")
	if n, err := a.WriteBatch(out); n != 5 || err != nil {
		t.Fatalf("WriteBatch = %d, %v; want 5", n, err)
	}
	expectArrivals(t, peers, out, 2)
	if s := a.Stats(); s.SendDropped != 1 || s.GSOBatches != 2 || s.SendCalls != 2 {
		t.Fatalf("stats %+v; want 1 dropped, 2 GSO batches in 2 calls", s)
	}
}

// TestGSOHookSeesHeaders: a send hook sees headers, and a GSO header's
// bytes are its datagrams back to back.
func TestGSOHookSeesHeaders(t *testing.T) {
	a := listenGSO(t, "127.0.0.1:0", Config{DisableGSO: true})
	peers := listenPeers(t, "127.0.0.1:0", 2)
	out := indexed([]send{{30, 0}, {30, 0}, {20, 0}, {30, 1}}, peers)
	var seen [][]byte
	a.setSysHooks(sysHooks{send: func(count int, datagram func(int) []byte) (int, syscall.Errno) {
		for i := range count {
			seen = append(seen, bytes.Clone(datagram(i)))
		}
		return 0, 0
	}})
	if n, err := a.WriteBatch(out); n != 4 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	run := slices.Concat(out[0].Buf[:30], out[1].Buf[:30], out[2].Buf[:20])
	if len(seen) != 2 || !bytes.Equal(seen[0], run) || !bytes.Equal(seen[1], out[3].Buf[:30]) {
		t.Fatalf("hook saw %x", seen)
	}
	expectArrivals(t, peers, out)
}

// holding returns whether a header's bytes hold datagram index i.
func holding(header []byte, i int) bool { return bytes.IndexByte(header, byte(i)) >= 0 }

// TestGSOPartialSend: sendmmsg taking only some headers resumes at the
// next header; every datagram arrives once, in order, and the counters
// count datagrams and calls.
func TestGSOPartialSend(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		a := listenGSO(t, "127.0.0.1:0", Config{DisableGSO: true})
		peers := listenPeers(t, "127.0.0.1:0", 2)
		rng := rand.New(rand.NewPCG(seed, 0))
		calls, short := 0, 0
		a.setSysHooks(sysHooks{send: func(count int, _ func(int) []byte) (int, syscall.Errno) {
			calls++
			limit := 1 + rng.IntN(count)
			if limit < count {
				short++
			}
			return limit, 0
		}})
		// Runs of 4 never straddle two chunks of 64: count/run GSO sends.
		const count, run = 200, 4
		out := indexed(equalSends(count, 40, run, 2), peers)
		if n, err := a.WriteBatch(out); n != count || err != nil {
			t.Fatalf("seed %d: WriteBatch = %d, %v", seed, n, err)
		}
		expectArrivals(t, peers, out)
		s := a.Stats()
		if short == 0 || s.SendCalls != uint64(calls) || s.SendPackets != count || s.GSOBatches != count/run || s.SendDropped != 0 {
			t.Fatalf("seed %d: %d calls (%d short), stats %+v", seed, calls, short, s)
		}
	}
}

// TestGSOSendErrors: transient errors retry a GSO header whole; a hard
// error, or retries running out, drops all of its datagrams and counts
// them, and the rest go out.
func TestGSOSendErrors(t *testing.T) {
	const count, run, bad = 30, 5, 12 // bad is in the third run, 10..14
	thirdRun := []int{10, 11, 12, 13, 14}
	for _, tc := range []struct {
		errno   syscall.Errno
		fails   int // tries that fail; later ones succeed
		tries   int
		retries uint64
		lost    []int
	}{
		{unix.EAGAIN, sendRetries, 1 + sendRetries, sendRetries, nil},
		{unix.EINTR, 1, 2, 1, nil},
		{unix.ENOBUFS, 100, 1 + sendRetries, sendRetries, thirdRun},
		{unix.EPERM, 100, 1, 0, thirdRun},
		{unix.EMSGSIZE, 100, 1, 0, thirdRun},
	} {
		t.Run(tc.errno.Error(), func(t *testing.T) {
			a := listenGSO(t, "127.0.0.1:0", Config{DisableGSO: true})
			peers := listenPeers(t, "127.0.0.1:0", 2)
			tries := 0
			a.setSysHooks(sysHooks{send: func(count int, datagram func(int) []byte) (int, syscall.Errno) {
				for i := range count {
					if !holding(datagram(i), bad) {
						continue
					}
					if i > 0 {
						return i, 0
					}
					if tries++; tries <= tc.fails {
						return 0, tc.errno
					}
					break
				}
				return 0, 0
			}})
			out := indexed(equalSends(count, 40, run, 2), peers)
			if n, err := a.WriteBatch(out); n != count-len(tc.lost) || err != nil {
				t.Fatalf("WriteBatch = %d, %v; want %d", n, err, count-len(tc.lost))
			}
			expectArrivals(t, peers, out, tc.lost...)
			s := a.Stats()
			if tries != tc.tries || s.SendRetries != tc.retries || s.SendDropped != uint64(len(tc.lost)) ||
				s.SendPackets != uint64(count-len(tc.lost)) || !a.gso.Load() {
				t.Fatalf("tried %d times, stats %+v, GSO %v; want %d tries, %d retries", tries, s, a.gso.Load(), tc.tries, tc.retries)
			}
		})
	}
}

// TestGSOFallback: when the socket's first GSO send fails as a path
// without GSO fails it, the socket stops using GSO and sends the same
// datagrams plainly, none lost or doubled.
func TestGSOFallback(t *testing.T) {
	for _, errno := range []syscall.Errno{unix.EIO, unix.EINVAL, unix.EOPNOTSUPP} {
		t.Run(errno.Error(), func(t *testing.T) {
			a := listenGSO(t, "127.0.0.1:0", Config{DisableGSO: true})
			peers := listenPeers(t, "127.0.0.1:0", 2)
			const count, run, size = 30, 5, 40
			headers, gsoHeaders := 0, 0
			a.setSysHooks(sysHooks{send: func(count int, datagram func(int) []byte) (int, syscall.Errno) {
				// Headers after the head are not reached when the head fails.
				headers++
				if len(datagram(0)) > size {
					gsoHeaders++
					return 0, errno
				}
				return 0, 0
			}})
			out := indexed(equalSends(count, size, run, 2), peers)
			if n, err := a.WriteBatch(out); n != count || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			expectArrivals(t, peers, out)
			if a.gso.Load() || gsoHeaders != 1 {
				t.Fatalf("GSO still %v after %d failed GSO calls", a.gso.Load(), gsoHeaders)
			}
			if s := a.Stats(); s.SendPackets != count || s.SendDropped != 0 || s.GSOBatches != 0 {
				t.Fatalf("stats %+v", s)
			}
			// Later batches go plainly from the start.
			if n, err := a.WriteBatch(out); n != count || err != nil || gsoHeaders != 1 {
				t.Fatalf("second WriteBatch = %d, %v after %d GSO calls", n, err, gsoHeaders)
			}
			expectArrivals(t, peers, out)
		})
	}
}

// TestGSOFailureAfterItWorked: once GSO has worked, a GSO header failing
// with EINVAL resends its datagrams plainly and GSO stays on; if the
// fault is one datagram's (a bad source), only that one is lost.
func TestGSOFailureAfterItWorked(t *testing.T) {
	a := listenGSO(t, "127.0.0.1:0", Config{DisableGSO: true})
	peers := listenPeers(t, "127.0.0.1:0", 2)
	const count, run, bad = 30, 5, 12
	out := indexed(equalSends(count, 40, run, 2), peers)
	if n, err := a.WriteBatch(out); n != count || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	expectArrivals(t, peers, out)
	a.setSysHooks(sysHooks{send: func(count int, datagram func(int) []byte) (int, syscall.Errno) {
		for i := range count {
			if holding(datagram(i), bad) {
				if i > 0 {
					return i, 0
				}
				return 0, unix.EINVAL
			}
		}
		return 0, 0
	}})
	if n, err := a.WriteBatch(out); n != count-1 || err != nil {
		t.Fatalf("WriteBatch = %d, %v; want %d", n, err, count-1)
	}
	expectArrivals(t, peers, out, bad)
	s := a.Stats()
	if !a.gso.Load() || s.GSOBatches != 2*count/run-1 || s.SendDropped != 1 || s.SendPackets != 2*count-1 {
		t.Fatalf("GSO %v, stats %+v", a.gso.Load(), s)
	}
}

// TestGSOFaultSchedule: a seeded mix of transient and hard errors, GSO
// failures and short sends. The datagrams that arrive are, per peer, a
// subset in order, as many as WriteBatch reports; the counters add up.
func TestGSOFaultSchedule(t *testing.T) {
	worked := 0
	for seed := range uint64(8) {
		a := listenGSO(t, "127.0.0.1:0", Config{BatchSize: 16, DisableGSO: true})
		peers := listenPeers(t, "127.0.0.1:0", 2)
		rng := rand.New(rand.NewPCG(seed, 7))
		// Even seeds are a path without GSO: every GSO header fails with
		// EIO. On odd ones, some calls fail their first GSO header.
		pathWithout := seed%2 == 0
		a.setSysHooks(sysHooks{send: func(count int, datagram func(int) []byte) (int, syscall.Errno) {
			failGSO := pathWithout || rng.IntN(12) == 0
			limit, errno := count, syscall.Errno(0)
			switch r := rng.IntN(10); {
			case r < 3:
				errno = []syscall.Errno{unix.EINTR, unix.EAGAIN, unix.ENOBUFS}[r]
			case r < 4:
				errno = unix.EPERM
			case r < 7:
				limit = 1 + rng.IntN(count)
			}
			for i := range min(limit, count) {
				if failGSO && len(datagram(i)) > 40 {
					if i == 0 {
						return 0, unix.EIO
					}
					return i, errno // the kernel sends up to the failing header
				}
			}
			return limit, errno
		}})
		sends := make([]send, 200)
		for i := range sends {
			sends[i] = send{size: 30 + 10*rng.IntN(2), to: rng.IntN(2)}
		}
		out := indexed(sends, peers)
		n, err := a.WriteBatch(out)
		if err != nil {
			t.Fatal(err)
		}
		received, last := 0, []int{-1, -1}
		in := makeMsgs(16, 64)
		for deadline := time.Now().Add(time.Second); received < n && time.Now().Before(deadline); {
			for p, peer := range peers {
				got, err := peer.ReadBatch(in)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range in[:got] {
					i := int(m.Buf[0])
					if i <= last[p] || out[i].Addr != peer.LocalAddr() || !bytes.Equal(m.Buf[:m.N], out[i].Buf[:out[i].N]) {
						t.Fatalf("seed %d peer %d: datagram %d after %d, or not sent to it, or corrupted", seed, p, i, last[p])
					}
					last[p] = i
				}
				received += got
			}
		}
		for _, peer := range peers {
			if more, _ := peer.ReadBatch(in); more != 0 {
				t.Fatalf("seed %d: more datagrams than WriteBatch reported", seed)
			}
		}
		s := a.Stats()
		if received != n || s.SendPackets != uint64(n) || s.SendDropped != uint64(len(out)-n) {
			t.Fatalf("seed %d: WriteBatch said %d, %d arrived, stats %+v", seed, n, received, s)
		}
		if pathWithout && (a.gso.Load() || s.GSOBatches != 0) {
			t.Fatalf("seed %d: GSO %v with every GSO send failing, stats %+v", seed, a.gso.Load(), s)
		}
		if a.gso.Load() && s.GSOBatches > 0 {
			worked++
		}
	}
	if worked == 0 {
		t.Fatal("GSO worked in no seed: the schedule misses a case")
	}
}

// TestGSOWithPacketInfo: runs are cut where Local changes, and each run
// leaves from its Local, with the source address and the segment size in
// one control buffer.
func TestGSOWithPacketInfo(t *testing.T) {
	for _, mode := range waitModes {
		t.Run(mode.String(), func(t *testing.T) {
			mux := listenGSO(t, "0.0.0.0:0", Config{BlockingWait: bool(mode), PacketInfo: true, DisableGSO: true})
			peer := listenPeers(t, "127.0.0.1:0", 1)[0]
			l1, l2 := netip.MustParseAddr("127.0.0.5"), netip.MustParseAddr("127.0.0.6")
			locals := []netip.Addr{l1, l1, l1, l2, l2, l2, {}, {}, l1}
			out := makeMsgs(len(locals), 100)
			for i := range out {
				out[i].N, out[i].Addr, out[i].Local = 100, peer.LocalAddr(), locals[i]
				out[i].Buf[0] = byte(i)
			}
			if n, headers := mux.prepare(out, 0); n != len(out) || !slices.Equal(mux.wsegs[:headers], []int{3, 3, 2, 1}) {
				t.Fatalf("prepared %d as %v", n, mux.wsegs[:headers])
			}
			if n, err := mux.WriteBatch(out); n != len(out) || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			got := readAll(t, peer, makeMsgs(16, 200), len(out))
			if len(got) != len(out) {
				t.Fatalf("received %d of %d", len(got), len(out))
			}
			port := mux.LocalAddr().Port()
			for i, m := range got {
				want := locals[i]
				if !want.IsValid() {
					want = netip.MustParseAddr("127.0.0.1")
				}
				if int(m.Buf[0]) != i || m.N != 100 || m.Addr != netip.AddrPortFrom(want, port) {
					t.Errorf("datagram %d: index %d, %d bytes, from %v; want from %v", i, m.Buf[0], m.N, m.Addr, want)
				}
			}
			if s := mux.Stats(); s.GSOBatches != 3 || s.SendCalls != 1 {
				t.Fatalf("stats %+v; want 3 GSO batches in 1 call", s)
			}
		})
	}
}

func TestGSOWithPacketInfoIPv6(t *testing.T) {
	mux := listenGSO(t, "[::]:0", Config{PacketInfo: true, DisableGSO: true})
	peer := listenPeers(t, "[::1]:0", 1)[0]
	out := indexed(slices.Repeat([]send{{64, 0}}, 8), []*mmsgConn{peer})
	for i := range out {
		out[i].Local = netip.IPv6Loopback()
	}
	if n, err := mux.WriteBatch(out); n != len(out) || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	for _, m := range readAll(t, peer, makeMsgs(16, 100), len(out)) {
		if m.Addr != netip.AddrPortFrom(netip.IPv6Loopback(), mux.LocalAddr().Port()) {
			t.Fatalf("datagram from %v", m.Addr)
		}
	}
	if s := mux.Stats(); s.GSOBatches != 1 || s.SendPackets != uint64(len(out)) {
		t.Fatalf("stats %+v", s)
	}
}

func TestGSOAllocs(t *testing.T) {
	for _, pktinfo := range []bool{false, true} {
		t.Run(fmt.Sprintf("pktinfo=%v", pktinfo), func(t *testing.T) {
			a := listenGSO(t, "0.0.0.0:0", Config{PacketInfo: pktinfo, DisableGSO: true})
			peer := listenPeers(t, "127.0.0.1:0", 1)[0]
			out := makeMsgs(64, 100)
			for i := range out {
				out[i].N, out[i].Addr = 100-i/32*10, peer.LocalAddr() // a run of 33, then 31
				out[i].Local = netip.AddrFrom4([4]byte{127, 0, 3, byte(1 + i/32)})
			}
			in := makeMsgs(64, 128)
			allocs := testing.AllocsPerRun(50, func() {
				if n, err := a.WriteBatch(out); n != len(out) || err != nil {
					t.Fatal(n, err)
				}
				for got := 0; got < len(out); {
					n, err := peer.ReadBatch(in)
					if err != nil {
						t.Fatal(err)
					}
					if n == 0 {
						if err := peer.WaitRead(time.Now().Add(time.Second)); err != nil {
							t.Fatal(err)
						}
					}
					got += n
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per GSO write and read of 64 datagrams, want 0", allocs)
			}
			if s := a.Stats(); s.GSOBatches == 0 || s.SendDropped != 0 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

// TestGSODefault: GSO is on unless disabled, where the kernel has it, and
// Stats says which.
func TestGSODefault(t *testing.T) {
	for _, disable := range []bool{false, true} {
		c, err := listenMmsg(netip.MustParseAddrPort("127.0.0.1:0"), Config{DisableGSO: disable})
		if err != nil {
			t.Fatal(err)
		}
		kernel := false
		c.rc.Control(func(fd uintptr) { kernel = probeGSO(int(fd)) })
		want := !disable && kernel
		if c.gso.Load() != want || c.Stats().GSO != want {
			t.Errorf("DisableGSO %v: GSO %v, Stats.GSO %v; want %v", disable, c.gso.Load(), c.Stats().GSO, want)
		}
		c.Close()
	}
}

// TestGSOControlSpace: a write header's control buffer holds a source
// address and a segment size, and the segment size message is what the
// kernel reads.
func TestGSOControlSpace(t *testing.T) {
	if need := unix.CmsgSpace(unix.SizeofInet6Pktinfo) + unix.CmsgSpace(segmentSizeLen); sendCtlSpace < need {
		t.Fatalf("sendCtlSpace %d < %d", sendCtlSpace, need)
	}
	ctl := make([]byte, sendCtlSpace)
	n := writeSegmentSize(ctl, 1200)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
	size := *(*uint16)(unsafe.Pointer(&ctl[unix.CmsgLen(0)]))
	if n != unix.CmsgSpace(segmentSizeLen) || h.Level != unix.SOL_UDP || h.Type != unix.UDP_SEGMENT ||
		int(h.Len) != unix.CmsgLen(segmentSizeLen) || size != 1200 {
		t.Fatalf("UDP_SEGMENT message %x", ctl[:n])
	}
}
