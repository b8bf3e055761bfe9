//go:build linux

package batchio

import (
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkVethEcho compares the echo capacity of the socket path and the
// AF_XDP path across a veth pair: an echo server pinned to core 0 in
// namespace A, a load pinned to core 1 in namespace B keeping a window of
// datagrams in flight through an ordinary socket. Rounds alternate
// between the modes; each reports echoed packets/s and the busy time of
// each core (from /proc/stat) per echoed datagram. On veth the receive
// side's kernel work runs where the sender's transmit raised it, on the
// load's core, for both paths: read "cpu1-ns/pkt" with that in mind.
// Needs root and two cores. -count repeats each mode before the next,
// so alternate rounds from the shell, one round of each mode a run:
//
//	go test -c -o /tmp/bt ./batchio
//	for r in 1 2 3; do XDP_BENCH_SIZE=64 /tmp/bt -test.run '^$' -test.bench VethEcho -test.benchtime 1x; done
func BenchmarkVethEcho(b *testing.B) {
	if runtime.NumCPU() < 2 {
		b.Skip("needs two cores")
	}
	size := 64
	if s := os.Getenv("XDP_BENCH_SIZE"); s != "" {
		size, _ = strconv.Atoi(s)
	}
	// off-nogso is the socket path without UDP GSO: a server of many
	// clients rarely has two datagrams in a row to one address, while
	// this load is one address, which GSO sends as one.
	for _, mode := range []string{"off", "off-nogso", "native", "generic"} {
		b.Run(fmt.Sprintf("mode=%s/size=%d", mode, size), func(b *testing.B) {
			for range b.N {
				r := vethEchoRound(b, mode, size, 3*time.Second)
				b.ReportMetric(r.pps, "pkts/s")
				b.ReportMetric(r.cpu0, "cpu0-ns/pkt")
				b.ReportMetric(r.cpu1, "cpu1-ns/pkt")
				b.ReportMetric(r.util0, "cpu0-util")
				b.ReportMetric(r.util1, "cpu1-util")
				b.ReportMetric(r.srv, "srv-ns/pkt")
				b.ReportMetric(r.load, "load-ns/pkt")
			}
		})
	}
}

// echoResult: cpu0 and cpu1 are each core's busy time per echoed
// datagram (anything that ran there, softirqs included); srv and load
// the server's and the load's own process time (user and system, as
// /proc/PID/stat charges it) per echoed datagram, which leaves out other
// processes on a shared machine.
type echoResult struct{ pps, cpu0, cpu1, util0, util1, srv, load float64 }

// procCPU reads a process's user and system time in clock ticks.
func procCPU(tb testing.TB, pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return u + st
}

// cpuBusy reads the busy and total jiffies of cpu0 and cpu1.
func cpuBusy(tb testing.TB) (busy, total [2]uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || (f[0] != "cpu0" && f[0] != "cpu1") {
			continue
		}
		i := int(f[0][3] - '0')
		for k, v := range f[1:9] {
			n, _ := strconv.ParseUint(v, 10, 64)
			total[i] += n
			if k != 3 && k != 4 { // idle, iowait
				busy[i] += n
			}
		}
	}
	return busy, total
}

func vethEchoRound(tb testing.TB, mode string, size int, d time.Duration) echoResult {
	p := newVethPair(tb)
	srv := startChild(tb, p.nsA, "bench-echo", "XDP_CPU=0", "XDP_MODE="+mode, "XDP_IF="+p.ifA,
		"XDP_BIND="+netip.AddrPortFrom(p.a4, 40000).String())
	srv.expect("ready")
	load := startChild(tb, p.nsB, "bench-load", "XDP_CPU=1", "XDP_SRC="+p.b4.String(),
		"XDP_DST="+netip.AddrPortFrom(p.a4, 40000).String(), "XDP_SIZE="+strconv.Itoa(size),
		"XDP_SECS="+d.String())
	load.expect("start")
	b0, t0 := cpuBusy(tb)
	s0, l0 := procCPU(tb, srv.cmd.Process.Pid), procCPU(tb, load.cmd.Process.Pid)
	st := parseStats(tb, load.expect("end"))
	b1, t1 := cpuBusy(tb)
	s1, l1 := procCPU(tb, srv.cmd.Process.Pid), procCPU(tb, load.cmd.Process.Pid)
	load.wait()
	srv.expect("quit")
	srv.wait()
	n := float64(st["echoed"])
	if n == 0 {
		tb.Fatal("nothing echoed")
	}
	jiffy := float64(time.Second) / 100 // USER_HZ
	return echoResult{
		pps:   n / d.Seconds(),
		cpu0:  float64(b1[0]-b0[0]) * jiffy / n,
		cpu1:  float64(b1[1]-b0[1]) * jiffy / n,
		util0: float64(b1[0]-b0[0]) / float64(max(t1[0]-t0[0], 1)),
		util1: float64(b1[1]-b0[1]) / float64(max(t1[1]-t0[1], 1)),
		srv:   float64(s1-s0) * jiffy / n,
		load:  float64(l1-l0) * jiffy / n,
	}
}

func init() {
	childRoles["bench-echo"] = roleBenchEcho
	childRoles["bench-load"] = roleBenchLoad
}

// roleBenchEcho echoes on one locked thread until "quit" (60 s at most).
func roleBenchEcho(t *testing.T) {
	runtime.LockOSThread()
	cfg := Config{BlockingWait: true}
	mode := os.Getenv("XDP_MODE")
	if mode == "off-nogso" {
		cfg.DisableGSO, mode = true, "off"
	}
	if m, err := ParseXDPMode(mode); err != nil {
		t.Fatal(err)
	} else if m != XDPOff {
		cfg.XDP = XDP{Mode: m, Interface: os.Getenv("XDP_IF")}
	}
	c, err := Listen(netip.MustParseAddrPort(os.Getenv("XDP_BIND")), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	say("ready")
	msgs := NewMessages(64, 2048)
	end := time.Now().Add(60 * time.Second)
	for time.Now().Before(end) {
		n, err := c.ReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if msgs[i].N == 4 && string(msgs[i].Buf[:4]) == "quit" {
				say("quit")
				return
			}
		}
		if n > 0 {
			c.WriteBatch(msgs[:n])
			continue
		}
		c.WaitRead(time.Now().Add(10 * time.Millisecond))
	}
	t.Fatal("no quit")
}

// roleBenchLoad keeps a window of datagrams in flight for XDP_SECS after
// a warm-up and counts the echoes.
func roleBenchLoad(t *testing.T) {
	runtime.LockOSThread()
	dst := netip.MustParseAddrPort(os.Getenv("XDP_DST"))
	size, _ := strconv.Atoi(os.Getenv("XDP_SIZE"))
	d, err := time.ParseDuration(os.Getenv("XDP_SECS"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Listen(netip.AddrPortFrom(netip.MustParseAddr(os.Getenv("XDP_SRC")), 0), Config{BlockingWait: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const window, batch = 512, 64
	out := patterned(batch, size, dst)
	for i := range out {
		out[i].N = size
	}
	in := NewMessages(batch, 2048)
	inflight, echoed := 0, 0
	lastEcho := time.Now()
	run := func(until time.Time) {
		for time.Now().Before(until) {
			if inflight+batch <= window {
				n, _ := c.WriteBatch(out)
				inflight += n
			}
			n, err := c.ReadBatch(in)
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				inflight -= n
				echoed += n
				lastEcho = time.Now()
				continue
			}
			if time.Since(lastEcho) > 20*time.Millisecond {
				inflight, lastEcho = 0, time.Now() // lost ones: open the window again
				continue
			}
			if inflight+batch > window {
				c.WaitRead(time.Now().Add(time.Millisecond))
			}
		}
	}
	run(time.Now().Add(500 * time.Millisecond))
	say("start")
	echoed = 0
	run(time.Now().Add(d))
	say("end echoed=%d", echoed)
	for range 5 {
		c.WriteBatch([]Message{{Buf: []byte("quit"), N: 4, Addr: dst}})
		time.Sleep(10 * time.Millisecond)
	}
}
