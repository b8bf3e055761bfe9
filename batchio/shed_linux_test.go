//go:build linux

package batchio

import (
	"math"
	"net"
	"net/netip"
	"testing"
)

// sendAndCount sends rounds of datagrams, one of each prefix in prefixes
// per round, to c from a plain socket, then an end marker, and counts what
// c receives by first byte. Rounds go in bursts small enough for the
// default receive buffer, drained between bursts.
func sendAndCount(t *testing.T, c *mmsgConn, prefixes []byte, rounds int) map[byte]int {
	t.Helper()
	const marker = 0xee
	to := c.LocalAddr()
	tx, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	got := map[byte]int{}
	msgs := makeMsgs(64, 128)
	buf := make([]byte, 100)
	drain := func(until bool) {
		for range 1000 {
			n, err := c.ReadBatch(msgs)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs[:n] {
				if m.N > 0 && m.Buf[0] == marker {
					return
				}
				if m.N > 0 {
					got[m.Buf[0]]++
				}
			}
			if n == 0 && !until {
				return
			}
		}
		t.Fatal("end marker never arrived")
	}
	for r := range rounds {
		for _, p := range prefixes {
			buf[0] = p
			if _, err := tx.Write(buf); err != nil {
				t.Fatal(err)
			}
		}
		if r%32 == 31 {
			drain(false)
		}
	}
	buf[0] = marker
	if _, err := tx.Write(buf); err != nil {
		t.Fatal(err)
	}
	drain(true)
	return got
}

// TestShedding: the filter sheds only datagrams with the chosen first
// byte, keeps about the asked share of them, counts what it sheds as a
// kernel drop, and goes away at keep 1.
func TestShedding(t *testing.T) {
	for _, bind := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(bind, func(t *testing.T) {
			c, err := listenMmsg(netip.MustParseAddrPort(bind), Config{DisableGSO: true})
			if err != nil {
				t.Skipf("no socket on %s: %v", bind, err)
			}
			defer c.Close()
			const rounds = 1000
			prefixes := []byte{0, 1, 0x13, 0xff}
			for _, tc := range []struct {
				keep     float64
				min, max int // datagrams with prefix 0 that get through
			}{
				{0, 0, 0},
				{0.5, 400, 600}, // binomial(1000, 0.5): σ ≈ 16
				{1.0 / 16, 30, 100},
				{1, rounds, rounds},
			} {
				if err := c.SetShedding(0, tc.keep); err != nil {
					t.Fatal(err)
				}
				before := c.KernelDrops()
				got := sendAndCount(t, c, prefixes, rounds)
				if got[0] < tc.min || got[0] > tc.max {
					t.Errorf("keep %v: %d of %d requests got through; want %d to %d", tc.keep, got[0], rounds, tc.min, tc.max)
				}
				for _, p := range prefixes[1:] {
					if got[p] != rounds {
						t.Errorf("keep %v: %d of %d datagrams with first byte %#x got through; want all", tc.keep, got[p], rounds, p)
					}
				}
				if shed, dropped := rounds-got[0], int(c.KernelDrops()-before); dropped != shed {
					t.Errorf("keep %v: kernel counted %d drops; %d were shed", tc.keep, dropped, shed)
				}
			}
		})
	}
}

func TestSheddingArguments(t *testing.T) {
	c, err := listenMmsg(netip.MustParseAddrPort("127.0.0.1:0"), Config{DisableGSO: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []float64{-0.1, math.NaN()} {
		if err := c.SetShedding(0, keep); err == nil {
			t.Errorf("SetShedding(0, %v) succeeded; want an error", keep)
		}
	}
	if err := c.SetShedding(0, 1); err != nil {
		t.Errorf("removing a filter that was never set: %v", err)
	}
	c.Close()
	if err := c.SetShedding(0, 0.5); err != ErrClosed {
		t.Errorf("SetShedding after Close = %v; want ErrClosed", err)
	}
	if n := c.KernelDrops(); n != 0 {
		t.Errorf("KernelDrops after Close = %d; want 0", n)
	}
}

// TestKernelDropsAllocs: reading the drop count allocates nothing, so the
// engine's ShardStats and Stats, which read it, do not either.
func TestKernelDropsAllocs(t *testing.T) {
	c, err := listenMmsg(netip.MustParseAddrPort("127.0.0.1:0"), Config{DisableGSO: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if a := testing.AllocsPerRun(100, func() { c.KernelDrops() }); a != 0 {
		t.Fatalf("KernelDrops: %v allocations; want 0", a)
	}
}
