package engine

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

func TestShedShift(t *testing.T) {
	const rate = 100_000.0
	for _, tc := range []struct {
		name    string
		seen    uint64
		current uint8
		elapsed time.Duration
		want    uint8
	}{
		{"nothing read", 0, 3, shedWindow, 0},
		{"at the rate", 10_000, 0, shedWindow, 0},
		{"just over", 10_001, 0, shedWindow, 1},
		{"8x over", 80_000, 0, shedWindow, 3},
		{"already shedding, still right", 10_000, 3, shedWindow, 3},
		{"already shedding, flood grew", 20_000, 3, shedWindow, 4},
		{"already shedding, flood gone", 10, 3, shedWindow, 0},
		{"longer window", 20_000, 0, 2 * shedWindow, 0},
		{"capped", 1 << 40, 0, shedWindow, maxShedShift},
		{"clock went back", 50_000, 2, -time.Second, 0},
	} {
		if got := shedShift(tc.seen, tc.current, tc.elapsed, rate); got != tc.want {
			t.Errorf("%s: shedShift(%d, %d, %v) = %d; want %d", tc.name, tc.seen, tc.current, tc.elapsed, got, tc.want)
		}
	}
}

func TestNextShedShift(t *testing.T) {
	const rate = 100_000.0 // 10,000 per window
	for _, tc := range []struct {
		name string
		r    requestShedder
		want uint8
	}{
		{"quiet", requestShedder{seen: 10, read: 500, drained: true}, 0},
		{"rises at once", requestShedder{seen: 80_000, read: 80_000, drained: true}, 3},
		{"holds", requestShedder{seen: 8_000, read: 8_100, drained: true, shift: 3}, 3},
		{"holds in the hysteresis band", requestShedder{seen: 3_000, read: 3_100, drained: true, shift: 3}, 3},
		{"falls below half the rate", requestShedder{seen: 1_000, read: 1_100, drained: true, shift: 3}, 1},
		{"flood gone", requestShedder{seen: 0, read: 100, drained: true, shift: 5}, 0},
		{"backlogged with requests", requestShedder{seen: 5_000, read: 6_000, shift: 2}, 3},
		{"backlogged with other packets", requestShedder{seen: 1_000, read: 6_000, shift: 0}, 0},
		{"backlogged at the cap", requestShedder{seen: 5_000, read: 5_000, shift: maxShedShift}, maxShedShift},
	} {
		r := tc.r
		if got := nextShedShift(&r, shedWindow, rate); got != tc.want {
			t.Errorf("%s: nextShedShift(%+v) = %d; want %d", tc.name, tc.r, got, tc.want)
		}
	}
}

// shedConn is a socket under a flood of connection requests that models
// the kernel's side of shedding (batchio.Shedder), which a plain fake does
// not: of the datagrams offered it queues one in every 1/keep
// (deterministically), read after the real datagrams.
type shedConn struct {
	*batchiotest.Conn
	keep    float64 // 1: no filter
	credit  float64
	queued  int
	reads   int // flood datagrams read
	calls   []float64
	failErr error
}

var _ batchio.Shedder = (*shedConn)(nil)

func (c *shedConn) SetShedding(prefix byte, keep float64) error {
	if prefix != 0 {
		return errors.New("shedding a prefix other than a connection request's")
	}
	c.calls = append(c.calls, keep)
	if c.failErr != nil {
		return c.failErr
	}
	c.keep = min(keep, 1)
	return nil
}

func (c *shedConn) KernelDrops() uint64 { return 0 }

// offer is n flood datagrams arriving at the socket.
func (c *shedConn) offer(n int) {
	c.credit += float64(n) * c.keep
	c.queued += int(c.credit)
	c.credit -= float64(int(c.credit))
}

// newShedHarness is a server with one connected client whose conn is a
// shedConn flooded with junk.
func newShedHarness(t *testing.T, cfg ServerConfig, junk func(h *srvHarness) []byte) (*srvHarness, *shedConn, *srvPeer, int) {
	h := newSrvHarness(t, cfg)
	p := h.peer("192.0.2.8:1000", 4, nil)
	i := p.connect()
	fc := &shedConn{Conn: h.conns[0], keep: 1}
	bad := junk(h)
	fc.Generate = func(buf []byte) (int, netip.AddrPort, bool) {
		if fc.queued == 0 {
			return 0, netip.AddrPort{}, false
		}
		fc.queued--
		fc.reads++
		return copy(buf, bad), netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(fc.reads)}), 9999), true
	}
	sh := h.s.shard0()
	sh.conn = fc
	sh.initShedding()
	return h, fc, p, i
}

// badRequest is a connection request with a valid header whose token does
// not decrypt.
func badRequest(h *srvHarness) []byte {
	bad := h.peer("198.51.100.1:1", 5, nil).request()
	bad[len(bad)-1] ^= 1
	return bad
}

// TestSheddingUnderFlood: a flood of forged requests at 8 times the rate
// the server reads makes it ask the kernel to keep 1 in 8; the requests it
// reads then stay within 2 to 4 times the decryption budget, the connected
// client keeps its slot, and when the flood stops (or the server stops)
// the filter goes.
func TestSheddingUnderFlood(t *testing.T) {
	h, fc, p, i := newShedHarness(t, ServerConfig{}, badRequest)
	h.s.shard0().recvBatches = 1 << 20 // a busy loop drains the socket between steps
	readRate := shedReadFactor * DefaultTokenDecryptsPerSecond
	perStep := 8 * readRate / 100 // 8 × the read rate, in 10 ms steps
	keepAlives := 0
	var readsAfterSettling int
	for step := range 200 { // 2 s of fake time
		if step == 50 {
			readsAfterSettling = fc.reads
		}
		fc.offer(perStep)
		h.step(10 * time.Millisecond)
		if step == 2 && fc.keep > 1.0/8 {
			// A queue fills in milliseconds: the first window must not
			// run its course before the flood is shed.
			t.Fatalf("30 ms into the flood the socket keeps %v of requests; want 1/8 or less", fc.keep)
		}
		for _, pkt := range p.received() {
			if pkt.Type == codec.ConnectionKeepAlive {
				keepAlives++
			}
		}
		p.send(p.keepAlive())
	}
	if got := h.s.Stats().ShedShift; got != 3 {
		t.Fatalf("under a flood 8× the read rate, ShedShift = %d; want 3 (keep 1 in 8); filter calls %v", got, fc.calls)
	}
	if fc.keep != 1.0/8 {
		t.Fatalf("the socket keeps %v of requests; want 1/8", fc.keep)
	}
	// 1.5 s after settling: the reads are between a quarter and all of the read rate.
	if reads, lo, hi := fc.reads-readsAfterSettling, 1.5*float64(readRate)/4, 1.5*float64(readRate)*1.05; float64(reads) < lo || float64(reads) > hi {
		t.Errorf("read %d flood requests in 1.5 s of shedding; want %.0f to %.0f", reads, lo, hi)
	}
	if !h.s.slotConnected(i) || keepAlives < 15 {
		t.Fatalf("client connected %v with %d keep-alives in 2 s of flood", h.s.slotConnected(i), keepAlives)
	}
	for range 30 { // the flood stops
		h.step(10 * time.Millisecond)
	}
	if got := h.s.Stats().ShedShift; got != 0 || fc.keep != 1 {
		t.Fatalf("300 ms after the flood, ShedShift = %d and the socket keeps %v; want 0 and 1 (no filter)", got, fc.keep)
	}
	if changes := h.s.Stats().ShedChanges; changes != uint64(len(fc.calls)) || changes < 2 {
		t.Fatalf("ShedChanges = %d for %d filter calls", changes, len(fc.calls))
	}

	// Flood again, then stop the server: the filter is removed.
	for range 30 {
		fc.offer(perStep)
		h.step(10 * time.Millisecond)
	}
	if fc.keep == 1 {
		t.Fatal("the second flood was not shed")
	}
	h.stop()
	if fc.keep != 1 || h.s.Stats().ShedShift != 0 {
		t.Fatalf("after Stop the socket keeps %v of requests; want 1 (no filter)", fc.keep)
	}
}

// TestSheddingWhenBacklogged: a server that cannot even read the read rate
// (here each Update reads at most maxRecvBatches batches, 102,400/s at one
// Update per 10 ms) sheds until its socket drains, then holds steady.
func TestSheddingWhenBacklogged(t *testing.T) {
	h, fc, _, i := newShedHarness(t, ServerConfig{}, badRequest)
	perStep := 4_000 // 400,000/s offered
	var shifts []uint8
	for step := range 200 {
		fc.offer(perStep)
		h.step(10 * time.Millisecond)
		if step%10 == 9 {
			shifts = append(shifts, h.s.Stats().ShedShift)
		}
	}
	// 400k/s into 102k/s of reads needs 1 in 4 or fewer; the queue must
	// have drained and the shift settled for the last second.
	last := shifts[len(shifts)-10:]
	for _, s := range last {
		if s != last[0] || s < 2 {
			t.Fatalf("shifts per 100 ms %v; want a steady one of at least 2 in the last second", shifts)
		}
	}
	t.Logf("shift per 100 ms: %v", shifts)
	if fc.queued > 2*perStep {
		t.Fatalf("%d flood datagrams still queued; the socket never drained (shifts %v)", fc.queued, shifts)
	}
	if !h.s.slotConnected(i) {
		t.Fatal("the client lost its slot")
	}
}

// TestSheddingOnlyCountsRequests: a flood of other packets (here, ones
// with a keep-alive's prefix from addresses with no session) is never
// shed, since the filter would not touch it.
func TestSheddingOnlyCountsRequests(t *testing.T) {
	h, fc, _, _ := newShedHarness(t, ServerConfig{}, func(h *srvHarness) []byte {
		junk := make([]byte, 40)
		junk[0] = byte(codec.ConnectionKeepAlive) | 1<<4
		return junk
	})
	h.s.shard0().recvBatches = 1 << 20
	for range 100 {
		fc.offer(20_000)
		h.step(10 * time.Millisecond)
	}
	if len(fc.calls) != 0 {
		t.Fatalf("a flood of non-requests set the request filter: %v", fc.calls)
	}
}

// TestSheddingOff: shedding stays off when the config turns it off or sets
// no decryption budget, and after the filter fails once it is not retried.
func TestSheddingOff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     ServerConfig
		failErr error
		calls   int
	}{
		{"disabled", ServerConfig{DisableRequestShedding: true}, nil, 0},
		{"no budget", ServerConfig{TokenDecryptsPerSecond: -1}, nil, 0},
		{"filter fails", ServerConfig{}, errors.New("EPERM"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, fc, _, i := newShedHarness(t, tc.cfg, badRequest)
			h.s.shard0().recvBatches = 1 << 20
			fc.failErr = tc.failErr
			for range 100 {
				fc.offer(5_000) // 500,000/s: shed by default
				h.step(10 * time.Millisecond)
			}
			if len(fc.calls) != tc.calls {
				t.Fatalf("%d filter calls %v; want %d", len(fc.calls), fc.calls, tc.calls)
			}
			st := h.s.Stats()
			if st.ShedShift != 0 || st.ShedErrors != uint64(tc.calls) {
				t.Fatalf("ShedShift %d, ShedErrors %d; want 0 and %d", st.ShedShift, st.ShedErrors, tc.calls)
			}
			if !h.s.slotConnected(i) {
				t.Fatal("the client lost its slot")
			}
		})
	}
}
