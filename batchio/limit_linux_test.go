//go:build linux

package batchio

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// listenLimited opens a socket with the per-source limit l, skipping the
// test where eBPF cannot load here.
func listenLimited(t *testing.T, bind string, l SourceLimit) *mmsgConn {
	t.Helper()
	c, err := listenMmsg(netip.MustParseAddrPort(bind), Config{DisableGSO: true, SourceLimit: l})
	if errors.Is(err, errNoEBPF) {
		t.Skipf("eBPF unavailable here: %v", err)
	}
	if err != nil {
		t.Skipf("no socket on %s: %v", bind, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialFrom opens a sending socket to c.
func dialFrom(t *testing.T, c Conn) *net.UDPConn {
	t.Helper()
	tx, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(c.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return tx
}

// drainBySource reads what c has queued, counting datagrams by source,
// until a read finds the queue empty after settle has passed.
func drainBySource(t *testing.T, c Conn, got map[netip.AddrPort]int, settle time.Duration) {
	t.Helper()
	msgs := makeMsgs(64, 9216)
	end := time.Now().Add(settle)
	for {
		n, err := c.ReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:n] {
			got[m.Addr]++
		}
		if n == 0 {
			if time.Now().After(end) {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func srcOf(tx *net.UDPConn) netip.AddrPort {
	return tx.LocalAddr().(*net.UDPAddr).AddrPort()
}

// TestSourceLimit: a source flooding far above its rate is cut to its
// burst plus its rate, counted by SourceDrops and KernelDrops, while
// another source (the same address, another port: the limit is per
// source) sending within its burst loses nothing.
func TestSourceLimit(t *testing.T) {
	for _, bind := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(bind, func(t *testing.T) {
			const rate, burst, flood, calm = 100, 50, 2000, 40
			c := listenLimited(t, bind, SourceLimit{Rate: rate, Burst: burst})
			if st := c.Stats(); !st.SourceLimit || st.SourceLimitErr != nil {
				t.Fatalf("Stats: SourceLimit %v, SourceLimitErr %v; want attached", st.SourceLimit, st.SourceLimitErr)
			}
			flooder, player := dialFrom(t, c), dialFrom(t, c)
			got := map[netip.AddrPort]int{}
			buf := make([]byte, 1119)
			start := time.Now()
			for i := range flood {
				if _, err := flooder.Write(buf); err != nil {
					t.Fatal(err)
				}
				if i%(flood/calm) == 0 {
					if _, err := player.Write(buf[:100]); err != nil {
						t.Fatal(err)
					}
				}
				if i%32 == 31 {
					drainBySource(t, c, got, 0)
				}
			}
			elapsed := time.Since(start)
			drainBySource(t, c, got, 50*time.Millisecond)
			if n := got[srcOf(player)]; n != calm {
				t.Errorf("player within its burst: %d of %d datagrams got through; want all", n, calm)
			}
			most := burst + int(rate*elapsed.Seconds()) + 1
			if n := got[srcOf(flooder)]; n < burst || n > most {
				t.Errorf("flooder: %d of %d datagrams got through in %v; want %d (the burst) to %d", n, flood, elapsed, burst, most)
			}
			dropped := flood - got[srcOf(flooder)]
			if n := c.SourceDrops(); n != uint64(dropped) {
				t.Errorf("SourceDrops = %d; %d were dropped", n, dropped)
			}
			if n := c.KernelDrops(); n != uint64(dropped) {
				t.Errorf("KernelDrops = %d; %d were dropped", n, dropped)
			}
		})
	}
}

// TestSourceLimitSteady: a source sending steadily at its rate, in bursts
// within its burst, loses nothing, over several intervals.
func TestSourceLimitSteady(t *testing.T) {
	const rate, burst = 1000, 20
	c := listenLimited(t, "127.0.0.1:0", SourceLimit{Rate: rate, Burst: burst})
	tx := dialFrom(t, c)
	got := map[netip.AddrPort]int{}
	buf := make([]byte, 200)
	sent := 0
	// 10 datagrams every 10 ms: the configured rate, in bursts of half the
	// burst; a late tick (a loaded machine) only sends later, never more
	// than the rate allows.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range 30 {
		<-tick.C
		for range 10 {
			if _, err := tx.Write(buf); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		drainBySource(t, c, got, 0)
	}
	drainBySource(t, c, got, 20*time.Millisecond)
	if n := got[srcOf(tx)]; n != sent {
		t.Errorf("%d of %d datagrams sent at the rate got through; want all (SourceDrops %d)", n, sent, c.SourceDrops())
	}
}

// TestSourceLimitSheds: the eBPF filter keeps the classic filter's
// shedding (TestShedding's cases on a socket with the limit).
func TestSourceLimitSheds(t *testing.T) {
	c := listenLimited(t, "127.0.0.1:0", SourceLimit{Rate: 1 << 30})
	for _, tc := range []struct {
		keep     float64
		min, max int
	}{{0, 0, 0}, {0.5, 400, 600}, {1, 1000, 1000}} {
		if err := c.SetShedding(0, tc.keep); err != nil {
			t.Fatal(err)
		}
		before := c.KernelDrops()
		got := sendAndCount(t, c, []byte{0, 1, 0xff}, 1000)
		if got[0] < tc.min || got[0] > tc.max {
			t.Errorf("keep %v: %d of 1000 requests got through; want %d to %d", tc.keep, got[0], tc.min, tc.max)
		}
		if got[1] != 1000 || got[0xff] != 1000 {
			t.Errorf("keep %v: %d and %d of 1000 other datagrams got through; want all", tc.keep, got[1], got[0xff])
		}
		if shed, dropped := 1000-got[0], int(c.KernelDrops()-before); dropped != shed {
			t.Errorf("keep %v: kernel counted %d drops; %d were shed", tc.keep, dropped, shed)
		}
	}
	if n := c.SourceDrops(); n != 0 {
		t.Errorf("SourceDrops = %d after shedding only; want 0", n)
	}
}

// TestSourceLimitClose: Close frees the program, and a new socket on the
// port takes a flood from one source whole.
func TestSourceLimitClose(t *testing.T) {
	c := listenLimited(t, "127.0.0.1:0", SourceLimit{Rate: 10, Burst: 5})
	info, err := c.limit.prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, ok := info.ID()
	if !ok {
		t.Skip("kernel does not report program ids")
	}
	addr := c.LocalAddr()
	c.Close()
	if n := c.SourceDrops(); n != 0 {
		t.Errorf("SourceDrops after Close = %d; want 0", n)
	}
	// The kernel frees the program after an RCU grace period.
	for deadline := time.Now().Add(5 * time.Second); ; {
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			break
		}
		p.Close()
		if time.Now().After(deadline) {
			t.Fatalf("program %d still loaded 5 s after Close", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c2, err := listenMmsg(addr, Config{DisableGSO: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	tx := dialFrom(t, c2)
	got := map[netip.AddrPort]int{}
	buf := make([]byte, 100)
	for i := range 500 {
		if _, err := tx.Write(buf); err != nil {
			t.Fatal(err)
		}
		if i%32 == 31 {
			drainBySource(t, c2, got, 0)
		}
	}
	drainBySource(t, c2, got, 20*time.Millisecond)
	if n := got[srcOf(tx)]; n != 500 {
		t.Errorf("new socket on %v: %d of 500 datagrams got through; want all", addr, n)
	}
}

// TestSourceLimitFallback: where eBPF cannot load, a limit asked for is an
// error that says why, or, Optional, a socket without it that says why in
// its Stats and still sheds with the classic filter.
func TestSourceLimitFallback(t *testing.T) {
	saved := attachLimit
	t.Cleanup(func() { attachLimit = saved })
	attachLimit = func(int, bool, SourceLimit) (*sourceLimiter, error) {
		return nil, fmt.Errorf("batchio: source limit: %w: load program: operation not permitted", errNoEBPF)
	}
	l := SourceLimit{Rate: 10}
	_, err := listenMmsg(netip.MustParseAddrPort("127.0.0.1:0"), Config{SourceLimit: l})
	if !errors.Is(err, errNoEBPF) {
		t.Fatalf("Listen with an unavailable limit: %v; want an error naming eBPF", err)
	}
	l.Optional = true
	c, err := listenMmsg(netip.MustParseAddrPort("127.0.0.1:0"), Config{DisableGSO: true, SourceLimit: l})
	if err != nil {
		t.Fatalf("Listen with an optional limit: %v", err)
	}
	defer c.Close()
	if st := c.Stats(); st.SourceLimit || !errors.Is(st.SourceLimitErr, errNoEBPF) {
		t.Errorf("Stats: SourceLimit %v, SourceLimitErr %v; want off, with the reason", st.SourceLimit, st.SourceLimitErr)
	}
	if err := c.SetShedding(0, 0); err != nil {
		t.Fatal(err)
	}
	if got := sendAndCount(t, c, []byte{0, 1}, 200); got[0] != 0 || got[1] != 200 {
		t.Errorf("classic shedding after the fallback: %d requests and %d others of 200; want 0 and 200", got[0], got[1])
	}
	if n := c.SourceDrops(); n != 0 {
		t.Errorf("SourceDrops without the limit = %d; want 0", n)
	}
}

func TestSourceLimitConfig(t *testing.T) {
	for _, l := range []SourceLimit{{Rate: -1}, {Rate: 1 << 31}, {Rate: 10, Burst: -1}, {Rate: 10, Entries: 8}} {
		if _, err := listenMmsg(netip.MustParseAddrPort("127.0.0.1:0"), Config{SourceLimit: l}); err == nil {
			t.Errorf("Listen with %+v succeeded; want an error", l)
		}
	}
}

// TestSourceDropsAllocs: reading the limit's count allocates nothing.
func TestSourceDropsAllocs(t *testing.T) {
	c := listenLimited(t, "127.0.0.1:0", SourceLimit{Rate: 10})
	if a := testing.AllocsPerRun(100, func() { c.SourceDrops() }); a != 0 {
		t.Fatalf("SourceDrops: %v allocations; want 0", a)
	}
}

// BenchmarkSourceLimitProgram times the filter in the kernel
// (BPF_PROG_TEST_RUN) on a 1,119-byte payload packet in an IPv4 frame:
// the cost per datagram the limit adds on the receiving CPU. One source
// (a lookup of a known entry) and, with shedding on, the config check.
func BenchmarkSourceLimitProgram(b *testing.B) {
	for _, tc := range []struct {
		name string
		shed bool
	}{{"limit", false}, {"limit+shed", true}} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := listenMmsg(netip.MustParseAddrPort("127.0.0.1:0"), Config{SourceLimit: SourceLimit{Rate: 1 << 30}})
			if err != nil {
				b.Skipf("eBPF unavailable here: %v", err)
			}
			defer c.Close()
			if tc.shed {
				c.SetShedding(0, 0.5)
			}
			frame := make([]byte, 14+20+8+1119)
			frame[12], frame[13] = 0x08, 0x00 // IPv4
			ip := frame[14:]
			ip[0], ip[9] = 0x45, 17
			copy(ip[12:], []byte{127, 0, 0, 2})
			ip[20+8] = 0x15 // a payload packet's prefix
			b.ResetTimer()
			_, d, err := c.limit.prog.Benchmark(frame, b.N, nil)
			if err != nil {
				b.Skipf("BPF_PROG_TEST_RUN: %v", err)
			}
			b.ReportMetric(float64(d.Nanoseconds()), "ns/datagram")
		})
	}
}

// TestSourceLimitBytes: a datagram larger than any netcode packet costs
// one share of the rate per started 1,280 bytes, and the largest netcode
// packet costs one.
func TestSourceLimitBytes(t *testing.T) {
	const rate, burst, flood = 100, 80, 400
	c := listenLimited(t, "127.0.0.1:0", SourceLimit{Rate: rate, Burst: burst})
	big, player := dialFrom(t, c), dialFrom(t, c)
	got := map[netip.AddrPort]int{}
	jumbo, largest := make([]byte, 9000), make([]byte, 1225)
	start := time.Now()
	for i := range flood {
		if _, err := big.Write(jumbo); err != nil {
			t.Fatal(err)
		}
		if i < burst {
			if _, err := player.Write(largest); err != nil {
				t.Fatal(err)
			}
		}
		if i%16 == 15 {
			drainBySource(t, c, got, 0)
		}
	}
	elapsed := time.Since(start)
	drainBySource(t, c, got, 50*time.Millisecond)
	if n := got[srcOf(player)]; n != burst {
		t.Errorf("%d of %d datagrams of 1,225 B (a burst) got through; want all", n, burst)
	}
	// 9,008 bytes are 8 units: the burst holds 10 of them.
	most := (burst+int(rate*elapsed.Seconds()))/8 + 2
	if n := got[srcOf(big)]; n < burst/8 || n > most {
		t.Errorf("%d of %d datagrams of 9,000 B got through in %v; want %d to %d", n, flood, elapsed, burst/8, most)
	}
}
