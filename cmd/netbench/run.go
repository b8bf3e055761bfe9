//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netcode-go/netcode/bench"
	"github.com/netcode-go/netcode/engine"
)

// Run timing.
const (
	// drainTime is how long the clients keep listening after they stop
	// sending, so that echoes in flight are not counted as lost.
	drainTime = 300 * time.Millisecond
	// windowLead is how far ahead a window's start is announced: idle
	// clients wake at least every engine.PacketSendInterval to see it.
	windowLead = 150 * time.Millisecond
	// markLead is how long before a window's start both sides' figures
	// are marked: the server's mark is a round trip to its process, and
	// its counters must not miss the first inputs.
	markLead = 20 * time.Millisecond
	// Sweep limits: a step is sustained when loss and p99 stay under these
	// and the clients sent at least sweepMinOffered of the target rate.
	sweepMaxLoss    = 0.01
	sweepMaxP99     = 10 * time.Millisecond
	sweepMinOffered = 0.95
	// sweepResolution is when a rate sweep stops bisecting (next bad
	// rate / last good rate).
	sweepResolution = 1.1
	// A game sweep's step is sustained when every active client is
	// connected, no more than gameMaxLoss of the snapshots are missing,
	// their p99 is under one tick interval, and the clients sent their
	// inputs; it stops bisecting at gameResolution.
	gameMaxLoss    = 0.001
	gameResolution = 1.05
	// gameSettle is how long a game sweep lets new players settle in
	// (handshakes done, snapshots flowing) before a step.
	gameSettle = 500 * time.Millisecond
)

// sampleEvery is -sample, or its automatic value: every client opens its
// replies up to 256 clients, and 1 in 8 beyond.
func (o *options) sampleEvery() int {
	switch {
	case o.sample > 0:
		return o.sample
	case o.slots() <= 256:
		return 1
	}
	return 8
}

// runner holds one benchmark run's parts.
type runner struct {
	o        *options
	out      io.Writer // progress lines
	child    *serverChild
	load     loader
	server   netip.AddrPort
	stop     chan struct{}
	loadCPUs []int
	// serverCPUs are the embedded server's cores (nil: not pinned apart).
	serverCPUs []int
	// loadXDPIf is the interface of the load's AF_XDP path (-load-xdp).
	loadXDPIf string

	floodSent uint64  // requests the last flood sent
	floodS    float64 // and for how long
}

func runBench(o *options) error {
	r := &runner{o: o, out: os.Stderr, stop: make(chan struct{})}
	if o.quiet {
		r.out = io.Discard
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		if _, ok := <-sig; ok {
			close(r.stop)
		}
	}()

	extra := 0
	if o.mode == "flood" {
		extra = 1 // the flooder's own P
	}
	if o.target != "" {
		addr, err := netip.ParseAddrPort(o.target)
		if err != nil {
			return fmt.Errorf("-target %q: want host:port: %w", o.target, err)
		}
		r.server = addr
		if cpus, err := allowedCPUs(); err == nil {
			r.loadCPUs = cpus
		}
	} else {
		loadCPUs, serverCPUs, err := splitCPUs()
		if err != nil {
			return err
		}
		if len(serverCPUs) == 1 && len(loadCPUs) >= 1 && loadCPUs[0] != serverCPUs[0] {
			if err := pinProcess(loadCPUs, extra); err != nil {
				return err
			}
			r.loadCPUs, r.serverCPUs = loadCPUs, serverCPUs
		} else {
			serverCPUs = nil // one CPU: nothing to separate
		}
		child, err := startChild(o, serverCPUs)
		if err != nil {
			return err
		}
		defer child.Close()
		r.child, r.server = child, child.addr
	}

	cfg := bench.LoadConfig{
		Server:       r.server,
		PrivateKey:   o.key,
		ProtocolID:   o.protocolID,
		Clients:      o.slots(),
		Active:       o.clients,
		PayloadBytes: o.size,
		Mode:         bench.LoadEcho,
		Bare:         o.bare,
		SampleEvery:  o.sampleEvery(),
		Sockets:      o.sockets,
		Workers:      o.workers,
		PresealLimit: int64(o.presealLimit) << 20,
		SendGrid:     o.sendGrid,
	}
	if o.clientNet != "" {
		cfg.ClientNet = netip.MustParsePrefix(o.clientNet) // checked by parseFlags
	}
	xdp, err := loadXDP(o, r.server.Addr())
	if err != nil {
		return err
	}
	cfg.XDP, r.loadXDPIf = xdp, xdp.Interface
	if o.reliable {
		rc := engine.DefaultReliableConfig()
		cfg.Reliable = &rc
	}
	switch o.mode {
	case "handshake":
		cfg.Mode = bench.LoadHandshake
	case "game":
		cfg.Mode = bench.LoadGame
		cfg.PayloadBytes, cfg.SnapshotBytes, cfg.TickHz = o.inputSize, o.size, o.tickHz
	}
	load, err := r.newLoads(cfg)
	if err != nil {
		return err
	}
	r.load = load
	defer load.Close()

	started := time.Now()
	var res *bench.Result
	var hist *bench.LoadTotals
	switch {
	case o.mode == "handshake":
		res, hist, err = r.runHandshake()
	case o.mode == "game" && o.sweep:
		res, hist, err = r.runGameSweep()
	case o.sweep:
		res, hist, err = r.runSweep()
	default:
		res, hist, err = r.runFixed()
	}
	if err != nil {
		return err
	}
	res.Started = started.UTC().Format(time.RFC3339)
	if err := load.Close(); err != nil {
		return err
	}
	return r.output(res, hist)
}

// connect starts the clients and waits for them.
func (r *runner) connect() (int, error) {
	t0 := time.Now()
	r.load.Start()
	n := r.load.WaitConnected(r.o.connect, r.stop)
	fmt.Fprintf(r.out, "connected %d of %d clients to %v in %v\n", n, r.load.Active(), r.server, time.Since(t0).Round(time.Millisecond))
	if n == 0 {
		return 0, fmt.Errorf("no client connected to %v within %v (check -key/-protocol and that the server is up)", r.server, r.o.connect)
	}
	return n, nil
}

// window is one measurement: the load's totals over the time the clients
// sent, and what the server measured over the same window.
type window struct {
	tot    bench.LoadTotals
	sendS  float64
	server *bench.ServerWindow
	load   bench.LoadWindow
	rel    *bench.ReliableFigures // the load's, with -reliable
	// loadXDP is the load's AF_XDP counters over the window (-load-xdp).
	loadXDP map[string]uint64
	target  float64 // pps asked for
	rate    float64
}

// loadMark is the load process's CPU time and socket datagrams at one
// instant, and its reliable endpoints' figures.
type loadMark struct {
	at        time.Time
	cpu       int64
	wait      int64
	datagrams uint64
	rel       bench.ReliableMark
	// loadCore and serverCore are the busy time of each side's cores
	// (coreBusy; -1: unknown).
	loadCore, serverCore int64
}

func (r *runner) loadMark() loadMark {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	in, out := r.load.SocketPackets()
	m := loadMark{at: time.Now(), cpu: ru.Utime.Nano() + ru.Stime.Nano(), wait: runDelay(), datagrams: in + out,
		loadCore: coreBusy(r.loadCPUs), serverCore: coreBusy(r.serverCPUs)}
	if r.o.reliable {
		r.load.ReliableMark(&m.rel)
	}
	return m
}

func (r *runner) loadWindow(b, e loadMark) bench.LoadWindow {
	return bench.LoadWindow{WindowS: e.at.Sub(b.at).Seconds(), CPUNanos: e.cpu - b.cpu, WaitNanos: waitDelta(b.wait, e.wait),
		Datagrams: e.datagrams - b.datagrams, Cores: len(r.loadCPUs),
		CoreNanos: waitDelta(b.loadCore, e.loadCore), ServerCoreNanos: waitDelta(b.serverCore, e.serverCore), ServerCores: len(r.serverCPUs)}
}

// markSending marks both sides' reliable endpoints as the load starts or
// stops sending (-reliable).
func (r *runner) markSending(m *bench.ReliableMark) error {
	if !r.o.reliable {
		return nil
	}
	r.load.ReliableMark(m)
	if r.child == nil {
		return nil
	}
	return r.child.Mark()
}

func (r *runner) beginServer() error {
	if r.child == nil {
		return nil
	}
	return r.child.Begin()
}

func (r *runner) endServer() (*bench.ServerWindow, error) {
	if r.child == nil {
		return nil, nil
	}
	return r.child.End()
}

// measure runs the clients at rate for d (or until interrupted), printing
// a progress line each second when progress is set; during, if not nil,
// runs while the clients send and returns the function that ends it.
func (r *runner) measure(rate float64, d time.Duration, progress bool, during func() func()) (*window, error) {
	// Sealing the window's payloads ahead (-preseal-limit) happens in
	// BeginWindow, before either side's window is marked: it is not part
	// of what the load spends per datagram.
	var start time.Time
	for try := 0; ; try++ {
		start = time.Now().Add(windowLead + r.load.PresealLead(rate, d)<<try)
		err := r.load.BeginWindow(rate, start, d)
		if err == nil {
			break
		}
		if !errors.Is(err, bench.ErrPresealLate) || try == 2 {
			return nil, err
		}
	}
	// Both sides' windows begin just before the start, not when sealing
	// ends: what is left of the lead (up to a second at thousands of
	// players) would count as idle time in each side's share of its core.
	time.Sleep(time.Until(start.Add(-markLead)))
	if err := r.beginServer(); err != nil {
		return nil, err
	}
	lm := r.loadMark()
	loadXDP := r.loadCounters()
	peerDrops, peerOK := linksTxDropped()
	time.Sleep(time.Until(start))
	// Datagrams per packet count the time the load sends only: the lead
	// and the drain carry keep-alives.
	var sb, se bench.ReliableMark
	if err := r.markSending(&sb); err != nil {
		return nil, err
	}
	var undo func()
	if during != nil {
		undo = during()
	}
	r.tick(start, d, progress)
	if undo != nil {
		undo()
	}
	r.load.SetRate(0) // at once if interrupted; else the window has ended
	if err := r.markSending(&se); err != nil {
		return nil, err
	}
	sendS := min(time.Since(start), d).Seconds()
	// Both sides' CPU windows end with the load's sends, as they began
	// with them; the server's game counts end after the drain, whose
	// replies they take.
	lc := r.loadMark()
	if r.child != nil {
		if err := r.child.Stop(); err != nil {
			return nil, err
		}
	}
	time.Sleep(drainTime)
	w := &window{tot: r.load.Totals(), sendS: sendS, rate: rate, target: rate * float64(r.load.Connected())}
	w.load = r.loadWindow(lm, lc)
	if loadXDP != nil {
		w.loadXDP = counterDelta(loadXDP, r.loadCounters())
	}
	if r.o.reliable {
		// The endpoints' figures take the drain's acks.
		var le bench.ReliableMark
		r.load.ReliableMark(&le)
		w.rel = bench.WindowFigures(&lm.rel, &sb, &se, &le)
	}
	if r.o.mode == "game" {
		w.rate = r.o.tickHz
		w.target = r.o.tickHz * float64(w.tot.Active)
	}
	var err error
	w.server, err = r.endServer()
	if d, ok := linksTxDropped(); ok && peerOK && w.server != nil && w.server.XDP != nil && r.o.serverNetns != "" {
		// A native-mode veth's 256-frame ring overflows on the sending
		// side: the load's interface counts it.
		w.server.XDP["load_link_tx_dropped"] = d - min(peerDrops, d)
	}
	return w, err
}

// tick waits d from t0, printing progress lines once a second. The loss it
// prints counts only payloads sent at least a second ago.
func (r *runner) tick(t0 time.Time, d time.Duration, progress bool) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	end := time.NewTimer(d)
	defer end.Stop()
	var prevSent, prevRecv uint64
	for {
		select {
		case <-r.stop:
			return
		case <-end.C:
			return
		case now := <-t.C:
			if !progress {
				continue
			}
			tot := r.load.Totals()
			loss := 0.0
			if prevSent > 0 && tot.Received < prevSent {
				loss = float64(prevSent-tot.Received) / float64(prevSent)
			}
			p99 := bench.PercentilesOf(tot.Hist).P99
			extra := ""
			if r.o.mode == "handshake" {
				extra = fmt.Sprintf("  handshakes/s %6d", tot.Handshakes-prevRecv)
				prevRecv = tot.Handshakes
			} else {
				extra = fmt.Sprintf("  pps %8d  loss %.4f%%", tot.Received-prevRecv, 100*loss)
				prevRecv = tot.Received
			}
			fmt.Fprintf(r.out, "%5.1fs  connected %5d%s  p99 %8.1f µs\n",
				now.Sub(t0).Seconds(), tot.Connected, extra, p99)
			prevSent = tot.Sent
		}
	}
}

// result turns a window into a report.
func (r *runner) result(mode string, w *window) *bench.Result {
	o := r.o
	res := &bench.Result{
		Mode:            mode,
		Target:          r.server.String(),
		Clients:         o.clients,
		Connected:       w.tot.Connected,
		PayloadBytes:    o.size,
		RateHz:          w.rate,
		TargetPPS:       w.target,
		Sent:            w.tot.Sent,
		Received:        w.tot.Received,
		Lost:            w.tot.Lost(),
		Duplicates:      w.tot.Duplicates,
		Reordered:       w.tot.Reordered,
		SendLag:         w.tot.SendLag,
		LossRatio:       w.tot.LossRatio(),
		Latency:         "echo",
		RTT:             bench.PercentilesOf(w.tot.Hist),
		DurationS:       w.sendS,
		ReceiveMode:     o.recv,
		Shards:          o.shards,
		Batch:           o.batch,
		IPv6:            o.ipv6,
		GSO:             o.gso,
		XDP:             o.xdp,
		LoadXDP:         o.loadXDP,
		LoadXDPCounters: w.loadXDP,
		SendGrid:        sendGridName(o.sendGrid),

		LoadKernelCounted: w.tot.KernelCounted,

		LoadSockets:    r.load.Sockets().String(),
		LoadWorkers:    len(r.load.SharedConns()), // not SharedStats: its counters are the workers' until Close
		LoadGOMAXPROCS: runtime.GOMAXPROCS(0),
		LoadCPUs:       r.loadCPUs,
		GoVersion:      runtime.Version(),
		Curve:          bench.Curve(w.tot.Hist),
	}
	if w.sendS > 0 {
		res.OfferedPPS = float64(w.tot.Sent) / w.sendS
		res.DeliveredPPS = float64(w.tot.Received) / w.sendS
	}
	if r.o.target != "" {
		res.ReceiveMode, res.Batch, res.Shards, res.XDP = "unknown", 0, 0, "" // the target's own
	}
	res.SetServer(w.server)
	res.SetLoad(w.load)
	res.Saturated = bench.Saturation(bench.Busy(res.ServerCPURatio, res.ServerWaitRatio, res.ServerCoreRatio),
		bench.Busy(res.LoadCPURatio, res.LoadWaitRatio, res.LoadCoreRatio), w.tot.SendLag, w.loadXDP["rx_dropped"])
	res.Bare = o.bare
	res.Reliable, res.ReliableLoad = o.reliable, w.rel
	res.SampleEvery = r.load.SampleEvery()
	res.LoadAvg = loadAverage()
	res.CPUPressure = cpuPressure()
	if o.mode == "game" {
		r.gameResult(res, w)
	}
	if m, ok := r.load.(*mixedLoad); ok {
		res.Groups = m.groups()
	}
	res.Label = o.label
	if res.Label == "" {
		res.Label = fmt.Sprintf("%s %s %dB %dc %d shards", mode, res.ReceiveMode, o.size, o.clients, o.shards)
		if o.bare {
			res.Label += " bare"
		}
		if o.reliable {
			res.Label += " reliable"
		}
	}
	return res
}

// gameResult fills in a game window's figures: the snapshots owed and
// received, the inputs sent.
func (r *runner) gameResult(res *bench.Result, w *window) {
	res.Latency = "snapshot"
	res.TickHz, res.SnapshotBytes, res.PayloadBytes = r.o.tickHz, r.o.size, r.o.inputSize
	res.Ticks, res.Inputs = w.tot.Ticks, w.tot.Inputs
	res.ClientsWithLoss, res.WorstClientLoss = w.tot.ClientsWithLoss, w.tot.WorstClientLoss
	res.Clients = w.tot.Active
	if w.sendS > 0 {
		res.OfferedPPS = float64(w.tot.Inputs) / w.sendS
	}
}

// cpuPressure returns the share of the last 10 s in which some runnable
// task waited for a CPU (/proc/pressure/cpu, "some avg10"), or nil.
func cpuPressure() *float64 {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return nil
	}
	for _, f := range strings.Fields(string(b)) {
		if v, ok := strings.CutPrefix(f, "avg10="); ok {
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				x /= 100
				return &x
			}
		}
	}
	return nil
}

// loadAverage returns the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// runFixed measures one window at a fixed rate: -rate payloads per
// second per client, or in game mode an input per -tick.
func (r *runner) runFixed() (*bench.Result, *bench.LoadTotals, error) {
	n, err := r.connect()
	if err != nil {
		return nil, nil, err
	}
	var during func() func()
	if r.o.mode == "flood" {
		during = r.flood
	}
	rate := r.o.rate
	if r.o.mode == "game" {
		rate = r.o.tickHz // an input per tick
	}
	w, err := r.measure(rate, r.o.duration, true, during)
	if err != nil {
		return nil, nil, err
	}
	res := r.result(r.o.mode, w)
	res.Connected = min(res.Connected, n)
	if r.o.mode == "flood" {
		r.floodResult(res, w)
	}
	return res, &w.tot, nil
}

// flood starts a flooder and returns the function that stops it.
func (r *runner) flood() func() {
	bind := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	if !r.server.Addr().Unmap().Is4() {
		bind = netip.IPv6Loopback()
	}
	to := r.server
	var sink *bench.DropSink
	if r.o.floodAt == "sink" {
		var err error
		if sink, err = bench.NewDropSink(bind); err != nil {
			fmt.Fprintln(os.Stderr, "netbench: flood:", err)
			return nil
		}
		to = sink.Addr()
	}
	var player *bench.Player
	var f *bench.Flooder
	var err error
	if r.o.floodKind == "payload" {
		// A player connects, then its address floods (the server's or,
		// for the control, the sink's port).
		if player, err = bench.ConnectPlayer(r.server, bind, r.o.key, r.o.protocolID, 1<<40); err == nil {
			f, err = bench.NewPayloadFlooder(to, player.Addr(), r.o.floodSize)
		}
	} else {
		f, err = bench.NewFlooder(to, r.o.protocolID, bind, r.o.floodGSO)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netbench: flood:", err)
		if player != nil {
			player.Close()
		}
		if sink != nil {
			sink.Close()
		}
		return nil
	}
	f.Idle = r.o.floodPriority == "idle"
	go func() {
		if err := f.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "netbench: flood:", err)
		}
	}()
	t0 := time.Now()
	return func() {
		f.Stop()
		r.floodSent, r.floodS = f.Sent(), time.Since(t0).Seconds()
		if player != nil {
			player.Close()
		}
		if sink != nil {
			sink.Close()
		}
	}
}

func (r *runner) floodResult(res *bench.Result, w *window) {
	if r.floodS > 0 {
		v := float64(r.floodSent) / r.floodS
		res.FloodSentPPS = &v
	}
	if w.server != nil && w.server.WindowS > 0 {
		v := float64(w.server.Dropped) / w.server.WindowS
		res.ServerDropsPerS = &v
		k := float64(w.server.KernelDrops) / w.server.WindowS
		res.KernelDropsPerS = &k
	}
	res.FloodPriority = r.o.floodPriority
	res.FloodGSO = &r.o.floodGSO
	res.FloodAt = r.o.floodAt
	res.ShedOff = r.o.noShed
	res.FloodKind = r.o.floodKind
	res.SourceLimit = r.o.sourceLimit
	if r.o.sourceLimit == "try" {
		res.SourceLimit = "on"
		if r.o.noBPF {
			res.SourceLimit = "fallback"
		}
	}
}

func (r *runner) runHandshake() (*bench.Result, *bench.LoadTotals, error) {
	if err := r.beginServer(); err != nil {
		return nil, nil, err
	}
	r.load.Start()
	t0 := time.Now()
	if err := r.load.BeginWindow(0, t0, 0); err != nil {
		return nil, nil, err
	}
	r.tick(t0, r.o.duration, true)
	tot := r.load.Totals()
	sendS := time.Since(t0).Seconds()
	server, err := r.endServer()
	if err != nil {
		return nil, nil, err
	}
	w := &window{tot: tot, sendS: sendS, server: server}
	res := r.result("handshake", w)
	res.Latency = "handshake"
	res.Connected = r.load.EverConnected()
	hs := float64(tot.Handshakes) / sendS
	res.HandshakesPerS = &hs
	if server != nil && server.Connects > 0 {
		// Per handshake rather than per packet: that is the unit here.
		cpu := float64(server.CPUNanos) / float64(server.Connects)
		allocs := float64(server.Mallocs) / float64(server.Connects)
		res.ServerCPUNsPerPacket, res.ServerAllocsPerPacket = &cpu, &allocs
	}
	return res, &w.tot, nil
}

// runSweep raises the per-client rate (doubling from -rate, then bisecting
// between the last sustained and the first failed rate) and reports the
// best sustained step.
func (r *runner) runSweep() (*bench.Result, *bench.LoadTotals, error) {
	if _, err := r.connect(); err != nil {
		return nil, nil, err
	}
	var during func() func()
	if r.o.mode == "flood" {
		during = r.flood
	}
	sw := bench.Sweep{Start: r.o.rate, Min: 1, Resolution: sweepResolution}
	var (
		steps     []bench.Step
		best      *window
		lastTried *window
	)
	for rate, ok := sw.Next(); ok && !r.stopped(); rate, ok = sw.Next() {
		var st bench.Step
		for try := 0; try <= r.o.retries && !r.stopped(); try++ {
			w, err := r.measure(rate, r.o.step, false, during)
			if err != nil {
				return nil, nil, err
			}
			lastTried = w
			st = stepOf(w)
			steps = append(steps, st)
			fmt.Fprintf(r.out, "step %2d: %7.0f Hz x %d = %9.0f pps target, %9.0f offered, %9.0f delivered, loss %.4f%%, p99 %8.1f µs, %s  %s\n",
				len(steps), rate, w.tot.Connected, st.TargetPPS, st.OfferedPPS, st.DeliveredPPS, 100*st.LossRatio, st.P99Micros,
				cpuLine(&st), verdict(st))
			if st.Sustained {
				best = w
				break
			}
		}
		sw.Record(rate, st.Sustained)
	}
	if best == nil {
		best = lastTried
	}
	if best == nil {
		return nil, nil, errors.New("sweep interrupted before its first step")
	}
	res := r.result("sweep", best)
	res.Steps = steps
	maxPPS := 0.0
	if _, ok := sw.Best(); ok {
		maxPPS = float64(best.tot.Received) / best.sendS
	}
	res.MaxSustainedPPS = &maxPPS
	if why := loadLimited(steps); why != "" {
		res.MaxSustainedPPS, res.LoadLimited = nil, why
	}
	if r.o.mode == "flood" {
		r.floodResult(res, best)
	}
	return res, &best.tot, nil
}

// loadLimited says why a sweep's answer would be the load's rather than
// the server's, or "": when the lowest step that failed (the one that set
// the ceiling) had the load wanting all of its core, or falling behind
// its schedule, in any of its tries, the server's ceiling lies somewhere
// above the answer and no capacity may be reported. Steps further up, where
// both sides are past their ceilings, do not count.
func loadLimited(steps []bench.Step) string {
	value := func(st *bench.Step) float64 {
		if st.Players > 0 {
			return float64(st.Players)
		}
		return st.RateHz
	}
	best, lowest := 0.0, math.Inf(1)
	for i := range steps {
		if steps[i].Sustained {
			best = max(best, value(&steps[i]))
		}
	}
	for i := range steps {
		if v := value(&steps[i]); !steps[i].Sustained && v > best {
			lowest = min(lowest, v)
		}
	}
	for i := range steps {
		st := &steps[i]
		if st.Sustained || value(st) != lowest || (st.Saturated != "load" && st.Saturated != "both") {
			continue
		}
		n := fmt.Sprintf("%.0f Hz", st.RateHz)
		if st.Players > 0 {
			n = fmt.Sprintf("%d players", st.Players)
		}
		dropped := ""
		if st.LoadDropped > 0 {
			dropped = fmt.Sprintf(", %d datagrams dropped on the load's receive", st.LoadDropped)
		}
		return fmt.Sprintf("the load, not (only) the server, was saturated at the failing step, %s (load %s of its core +%s wait, core busy %s%s; server %s +%s, core busy %s): no capacity reported",
			n, pct(st.LoadCPURatio), pct(st.LoadWaitRatio), pct(st.LoadCoreRatio), dropped, pct(st.ServerCPURatio), pct(st.ServerWaitRatio), pct(st.ServerCoreRatio))
	}
	return ""
}

// stopped reports whether the run was interrupted.
func (r *runner) stopped() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

// cpuLine says how much of its core each side used and waited for.
func cpuLine(st *bench.Step) string {
	return fmt.Sprintf("cpu server %s (+%s wait, core %s) load %s (+%s wait, core %s)", pct(st.ServerCPURatio), pct(st.ServerWaitRatio),
		pct(st.ServerCoreRatio), pct(st.LoadCPURatio), pct(st.LoadWaitRatio), pct(st.LoadCoreRatio))
}

func pct(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100**p)
}

// runGameSweep raises the number of players (doubling from -clients up to
// -max-clients, then bisecting) and reports the most whose snapshots all
// arrived with p99 under one tick.
func (r *runner) runGameSweep() (*bench.Result, *bench.LoadTotals, error) {
	if _, err := r.connect(); err != nil {
		return nil, nil, err
	}
	sw := bench.Sweep{Start: float64(r.o.clients), Min: 1, Max: float64(r.o.maxClients), Integer: true, Resolution: gameResolution}
	var (
		steps     []bench.Step
		best      *window
		lastTried *window
	)
	for v, ok := sw.Next(); ok && !r.stopped(); v, ok = sw.Next() {
		n := int(v)
		if err := r.load.SetActive(n); err != nil {
			return nil, nil, err
		}
		r.load.WaitConnected(r.o.connect, r.stop)
		time.Sleep(gameSettle)
		var st bench.Step
		for try := 0; try <= r.o.retries && !r.stopped(); try++ {
			w, err := r.measure(r.o.tickHz, r.o.step, false, nil)
			if err != nil {
				return nil, nil, err
			}
			lastTried = w
			st = gameStepOf(w, r.o.tickHz)
			steps = append(steps, st)
			fmt.Fprintf(r.out, "step %2d: %5d players (%d connected), %9.0f snapshots/s owed, %9.0f delivered, loss %.4f%% (%d clients), p99 %8.1f µs, tick p99 %s, %s skipped, %s  %s%s\n",
				len(steps), n, w.tot.Connected, st.TargetPPS, st.DeliveredPPS, 100*st.LossRatio, w.tot.ClientsWithLoss, st.P99Micros,
				tickP99(w.server), skipped(w.server), cpuLine(&st), verdict(st), xdpNote(w))
			if st.Sustained {
				best = w
				break
			}
		}
		sw.Record(v, st.Sustained)
	}
	if best == nil {
		best = lastTried
	}
	if best == nil {
		return nil, nil, errors.New("sweep interrupted before its first step")
	}
	res := r.result("game-sweep", best)
	res.Steps = steps
	players := 0
	if v, ok := sw.Best(); ok {
		players = int(v)
	}
	res.MaxPlayers = &players
	if why := loadLimited(steps); why != "" {
		res.MaxPlayers, res.LoadLimited = nil, why
	}
	return res, &best.tot, nil
}

// sendGridName is -send-grid for the result: "" when off.
func sendGridName(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// xdpNote is a step line's tail of the AF_XDP counters of the server and
// the load, where they have them.
func xdpNote(w *window) string {
	var b strings.Builder
	if l := w.server.XDPLine(); l != "" {
		b.WriteString("  [xdp: " + l + "]")
	}
	if l := bench.CounterLine(w.loadXDP); l != "" {
		b.WriteString("  [load xdp: " + l + "]")
	}
	return b.String()
}

func skipped(s *bench.ServerWindow) string {
	if s == nil {
		return "n/a"
	}
	return fmt.Sprint(s.TicksSkipped)
}

func tickP99(s *bench.ServerWindow) string {
	if s == nil || s.TickUs == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f µs", s.TickUs.P99)
}

// gameStepOf judges a game sweep's step: every active player connected,
// at most gameMaxLoss of the snapshots missing and of the inputs (when
// the server's window is known), p99 under one tick interval, and the
// inputs sent as scheduled.
func gameStepOf(w *window, tickHz float64) bench.Step {
	p := bench.PercentilesOf(w.tot.Hist)
	st := bench.Step{
		Players:   w.tot.Active,
		RateHz:    tickHz,
		TargetPPS: w.target,
		LossRatio: w.tot.LossRatio(),
		P99Micros: p.P99,
	}
	setRatios(&st, w)
	if w.sendS > 0 {
		st.OfferedPPS = float64(w.tot.Inputs) / w.sendS
		st.DeliveredPPS = float64(w.tot.Received) / w.sendS
	}
	interval := 1e6 / tickHz
	inputs := tickHz * float64(w.tot.Active)
	switch {
	case w.tot.Connected < w.tot.Active:
		st.Why = fmt.Sprintf("only %d of %d connected", w.tot.Connected, w.tot.Active)
	case w.tot.Ticks == 0:
		st.Why = "no snapshots"
	case st.LossRatio > gameMaxLoss:
		st.Why = "loss > 0.1%"
	case w.server != nil && float64(w.server.Inputs) < (1-gameMaxLoss)*float64(w.tot.Inputs):
		// A server that reads only until its next tick leaves what it
		// cannot read to its socket, which drops it when full.
		st.Why = "inputs lost > 0.1%"
	case p.P99 > interval:
		st.Why = "p99 > one tick"
	case st.OfferedPPS < sweepMinOffered*inputs:
		st.Why = "load generator could not send the inputs"
	default:
		st.Sustained = true
	}
	return st
}

// setRatios fills in a step's CPU and wait ratios and saturation.
func setRatios(st *bench.Step, w *window) {
	var r bench.Result
	r.SetServer(w.server)
	r.SetLoad(w.load)
	st.ServerCPURatio, st.ServerWaitRatio = r.ServerCPURatio, r.ServerWaitRatio
	st.LoadCPURatio, st.LoadWaitRatio = r.LoadCPURatio, r.LoadWaitRatio
	st.ServerCoreRatio, st.LoadCoreRatio = r.ServerCoreRatio, r.LoadCoreRatio
	st.LoadDropped = w.loadXDP["rx_dropped"]
	st.Saturated = bench.Saturation(bench.Busy(st.ServerCPURatio, st.ServerWaitRatio, st.ServerCoreRatio),
		bench.Busy(st.LoadCPURatio, st.LoadWaitRatio, st.LoadCoreRatio), w.tot.SendLag, st.LoadDropped)
	st.XDP = w.server.XDPLine()
	st.LoadXDP = bench.CounterLine(w.loadXDP)
}

func stepOf(w *window) bench.Step {
	p := bench.PercentilesOf(w.tot.Hist)
	st := bench.Step{
		RateHz:    w.rate,
		TargetPPS: w.target,
		LossRatio: w.tot.LossRatio(),
		P99Micros: p.P99,
	}
	setRatios(&st, w)
	if w.sendS > 0 {
		st.OfferedPPS = float64(w.tot.Sent) / w.sendS
		st.DeliveredPPS = float64(w.tot.Received) / w.sendS
	}
	switch {
	case st.LossRatio > sweepMaxLoss:
		st.Why = "loss > 1%"
	case p.P99 > float64(sweepMaxP99.Microseconds()):
		st.Why = "p99 > 10 ms"
	case st.OfferedPPS < sweepMinOffered*st.TargetPPS:
		st.Why = "load generator could not offer the rate"
	default:
		st.Sustained = true
	}
	return st
}

func verdict(s bench.Step) string {
	if s.Sustained {
		return "ok"
	}
	return s.Why
}

// output prints the summary and writes the requested files.
func (r *runner) output(res *bench.Result, tot *bench.LoadTotals) error {
	if err := res.WriteSummary(os.Stdout); err != nil {
		return err
	}
	if r.o.jsonPath != "" {
		if err := res.WriteJSONFile(r.o.jsonPath); err != nil {
			return err
		}
	}
	if r.o.hgrmPath != "" {
		if err := writeFile(r.o.hgrmPath, func(w io.Writer) error { return bench.WriteHgrm(w, tot.Hist) }); err != nil {
			return err
		}
	}
	if r.o.plotPath != "" {
		title := fmt.Sprintf("netcode %s latency by percentile", res.Latency)
		series := []bench.PlotSeries{{Label: res.Label, Points: res.Curve}}
		if err := writeFile(r.o.plotPath, func(w io.Writer) error { return bench.WritePlotSVG(w, title, series) }); err != nil {
			return err
		}
	}
	return nil
}

// plotFiles is -plot FILE.svg a.json b.json ...: one line per run.
func plotFiles(path string, files []string) error {
	var series []bench.PlotSeries
	latency := ""
	for _, f := range files {
		res, err := bench.ReadResultFile(f)
		if err != nil {
			return err
		}
		label := res.Label
		if label == "" {
			label = strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		}
		series = append(series, bench.PlotSeries{Label: label, Points: res.Curve})
		if latency == "" {
			latency = res.Latency
		}
	}
	title := fmt.Sprintf("netcode %s latency by percentile", latency)
	return writeFile(path, func(w io.Writer) error { return bench.WritePlotSVG(w, title, series) })
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
