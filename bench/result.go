package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// ServerWindow is what a server process measured about itself over a
// measurement window. cmd/netbench's server child sends it as JSON.
type ServerWindow struct {
	WindowS    float64 `json:"window_s"`
	PacketsIn  uint64  `json:"packets_in"`
	PacketsOut uint64  `json:"packets_out"`
	Echoed     uint64  `json:"echoed"`
	Dropped    uint64  `json:"dropped"`
	// KernelDrops: datagrams the kernel dropped for the server's sockets
	// (shed connection requests, full queues).
	KernelDrops uint64 `json:"kernel_drops"`
	CPUNanos    int64  `json:"cpu_ns"` // user + system (getrusage)
	// WaitNanos is how long the process's threads waited, runnable, for a
	// CPU (schedstat run delay; -1: unknown): time other processes took
	// from the cores it was pinned to.
	WaitNanos   int64  `json:"wait_ns"`
	Mallocs     uint64 `json:"mallocs"`
	GCCycles    uint32 `json:"gc_cycles"`
	Connected   int    `json:"connected"`
	Connects    uint64 `json:"connects"`
	ReceiveMode string `json:"receive_mode"`
	Batch       int    `json:"batch"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	CPUs        []int  `json:"cpus,omitempty"` // the cores it was pinned to
	// The sockets' system calls and the passes that parked for a datagram.
	RecvCalls uint64 `json:"recv_calls"`
	SendCalls uint64 `json:"send_calls"`
	Parks     uint64 `json:"parks"`
	// Game servers: inputs received, snapshots sent, ticks run and tick
	// numbers skipped, and the ticks' durations (µs).
	Inputs       uint64       `json:"inputs,omitempty"`
	Snapshots    uint64       `json:"snapshots,omitempty"`
	Ticks        uint64       `json:"ticks,omitempty"`
	TicksSkipped uint64       `json:"ticks_skipped,omitempty"`
	TickUs       *Percentiles `json:"tick_us,omitempty"`
	// DropReasons names the reasons of the window's drops, with counts.
	DropReasons map[string]uint64 `json:"drop_reasons,omitempty"`
	// Reliable is the server's reliable endpoints' figures (its echoes
	// or snapshots), with netbench -reliable.
	Reliable *ReliableFigures `json:"reliable,omitempty"`
	// XDP is the window's counts of the server's AF_XDP path (netbench
	// -xdp) by name: the kernel's drops for its sockets (rx_dropped,
	// rx_ring_full, rx_fill_empty), sends dropped for want of a frame
	// (no_frame), its interface's drops (link_rx_dropped,
	// link_tx_dropped), on the testbed the load's interface's
	// tx_dropped (load_link_tx_dropped: a native-mode veth's full
	// 256-frame ring), and the datagrams that took the kernel socket.
	XDP map[string]uint64 `json:"xdp,omitempty"`
}

// XDPLine is the AF_XDP counters of w that are not zero, "name n, ...",
// sorted by name, or "no drops" if there are none; "" without XDP.
func (w *ServerWindow) XDPLine() string {
	if w == nil {
		return ""
	}
	return CounterLine(w.XDP)
}

// CounterLine lists the counters of m that are not zero, "name n, ...",
// or "no drops"; "" for a nil m.
func CounterLine(m map[string]uint64) string {
	if m == nil {
		return ""
	}
	var f []string
	for k, v := range m {
		if v > 0 {
			f = append(f, fmt.Sprintf("%s %d", k, v))
		}
	}
	if len(f) == 0 {
		return "no drops"
	}
	slices.Sort(f)
	return strings.Join(f, ", ")
}

// Step is one offered load of a sweep.
type Step struct {
	// Players is a game sweep's step: the clients connected and owed a
	// snapshot every tick.
	Players      int     `json:"players,omitempty"`
	RateHz       float64 `json:"rate_hz"`
	TargetPPS    float64 `json:"target_pps"`
	OfferedPPS   float64 `json:"offered_pps"`
	DeliveredPPS float64 `json:"delivered_pps"`
	LossRatio    float64 `json:"loss_ratio"`
	P99Micros    float64 `json:"p99_us"`
	Sustained    bool    `json:"sustained"`
	// Why is set when the step was not sustained.
	Why string `json:"why,omitempty"`
	// The share of its core each side used, and waited for, and which
	// was saturated.
	ServerCPURatio  *float64 `json:"server_cpu_ratio"`
	LoadCPURatio    *float64 `json:"load_cpu_ratio"`
	ServerWaitRatio *float64 `json:"server_wait_ratio"`
	LoadWaitRatio   *float64 `json:"load_wait_ratio"`
	// ServerCoreRatio and LoadCoreRatio are the share of each side's
	// cores that was busy, by anything (Result.ServerCoreRatio).
	ServerCoreRatio *float64 `json:"server_core_ratio,omitempty"`
	LoadCoreRatio   *float64 `json:"load_core_ratio,omitempty"`
	Saturated       string   `json:"saturated"`
	// XDP is the server's AF_XDP counters of the step's window that are
	// not zero (ServerWindow.XDPLine), with netbench -xdp; LoadXDP the
	// load's, with -load-xdp.
	XDP     string `json:"xdp,omitempty"`
	LoadXDP string `json:"load_xdp,omitempty"`
	// LoadDropped is the datagrams the load's AF_XDP path dropped on
	// receive in the window (its rx_dropped, with -load-xdp).
	LoadDropped uint64 `json:"load_dropped,omitempty"`
}

// Result is a run's report; its JSON form is what -json writes and what
// -plot and the comparison table read. Server measurements are nil (null)
// when the server ran elsewhere (-target).
type Result struct {
	Mode string `json:"mode"` // echo, sweep, handshake, flood, game, game-sweep
	// Bare: the protocol-free control (netbench -bare).
	Bare bool `json:"bare"`
	// Reliable: both sides ran reliable endpoints (netbench -reliable);
	// ReliableLoad is the load's figures (its payloads or inputs), and
	// Server.Reliable the server's.
	Reliable     bool             `json:"reliable"`
	ReliableLoad *ReliableFigures `json:"reliable_load,omitempty"`

	Target       string  `json:"target"`
	Clients      int     `json:"clients"`
	Connected    int     `json:"connected"`
	PayloadBytes int     `json:"payload_bytes"`
	RateHz       float64 `json:"rate_hz"`
	// TargetPPS is what the clients were asked to send; OfferedPPS what
	// they sent; DeliveredPPS the echoes that came back.
	TargetPPS    float64 `json:"target_pps"`
	OfferedPPS   float64 `json:"offered_pps"`
	DeliveredPPS float64 `json:"delivered_pps"`
	Sent         uint64  `json:"sent"`
	Received     uint64  `json:"received"`
	Lost         uint64  `json:"lost"`
	Duplicates   uint64  `json:"duplicates"`
	Reordered    uint64  `json:"reordered"`
	// SendLag counts sends the clients skipped because they fell behind
	// their schedule (the load generator was the bottleneck).
	SendLag   uint64  `json:"send_lag"`
	LossRatio float64 `json:"loss_ratio"`
	// Latency says what RTT measures: "echo" (payload round trip),
	// "handshake" (connect to connected) or "snapshot" (a game tick's
	// send time to its snapshot's receipt, one way).
	Latency string      `json:"latency"`
	RTT     Percentiles `json:"rtt_us"`

	// Game mode: Sent, Received and Lost count snapshots (ticks × active
	// clients owed, arrived, missing), TargetPPS and DeliveredPPS too;
	// OfferedPPS is the clients' inputs.
	TickHz          float64 `json:"tick_hz,omitempty"`
	SnapshotBytes   int     `json:"snapshot_bytes,omitempty"`
	Ticks           uint64  `json:"ticks,omitempty"`
	Inputs          uint64  `json:"inputs,omitempty"`
	ClientsWithLoss int     `json:"clients_with_loss"`
	WorstClientLoss float64 `json:"worst_client_loss_ratio"`
	// TickUs is the server's tick durations (measured in its process).
	TickUs *Percentiles `json:"tick_us,omitempty"`
	// MaxPlayers is a game sweep's answer: the most players whose
	// snapshots all arrived (loss <= 0.1%) with p99 under a tick.
	MaxPlayers *int `json:"max_players,omitempty"`
	// LoadLimited is set, and MaxPlayers or MaxSustainedPPS left out,
	// when a sweep's failing step had the load saturated: the figure
	// would be the load's ceiling, not the server's.
	LoadLimited string `json:"load_limited,omitempty"`
	// SampleEvery: only every SampleEvery-th client opened and timed its
	// replies (the others counted them unopened); 1: all did.
	SampleEvery int `json:"sample_every"`

	// ServerCPURatio and LoadCPURatio are the share of its cores each
	// process used over the window (CPU time / window / cores it was
	// pinned to); ServerCPUNsPerDatagram and LoadCPUNsPerDatagram divide
	// each one's CPU time by the datagrams its sockets moved (in + out).
	// Saturated says which side wanted all of its core (CPU time plus the
	// time it waited for the core >= 90% of the window, or the load fell
	// behind its schedule): server, load, both or neither.
	ServerCPURatio         *float64 `json:"server_cpu_ratio"`
	LoadCPURatio           *float64 `json:"load_cpu_ratio"`
	ServerCPUNsPerDatagram *float64 `json:"server_cpu_ns_per_datagram"`
	LoadCPUNsPerDatagram   *float64 `json:"load_cpu_ns_per_datagram"`
	Saturated              string   `json:"saturated"`
	// LoadAvg is the machine's load average (/proc/loadavg) when the
	// result was made, and CPUPressure the share of the last 10 s in
	// which some task waited for a CPU (/proc/pressure/cpu): the other
	// work the cores were shared with.
	LoadAvg     string   `json:"load_avg"`
	CPUPressure *float64 `json:"cpu_pressure,omitempty"`
	// ServerWaitRatio and LoadWaitRatio are the share of the window each
	// process's threads spent runnable but waiting for a CPU: how much
	// other processes took from its cores (nil: unknown).
	ServerWaitRatio *float64 `json:"server_wait_ratio"`
	LoadWaitRatio   *float64 `json:"load_wait_ratio"`
	// ServerCoreRatio and LoadCoreRatio are the share of the window each
	// side's cores were busy by anything (/proc/stat): the process, and
	// the kernel's work on that core outside it, such as the testbed's
	// NAPI threads receiving for it (nil: unknown, or not pinned apart).
	ServerCoreRatio *float64 `json:"server_core_ratio,omitempty"`
	LoadCoreRatio   *float64 `json:"load_core_ratio,omitempty"`

	// ServerCPUNsPerPacket and ServerAllocsPerPacket divide the server
	// process's CPU time (user + system) and heap allocations over the
	// window by the datagrams it received; in handshake mode, by the
	// connections it accepted.
	ServerCPUNsPerPacket  *float64      `json:"server_cpu_ns_per_packet"`
	ServerAllocsPerPacket *float64      `json:"server_allocs_per_packet"`
	ServerGCCycles        *uint32       `json:"server_gc_cycles"`
	Server                *ServerWindow `json:"server"`

	DurationS   float64 `json:"duration_s"`
	ReceiveMode string  `json:"receive_mode"`
	Shards      int     `json:"shards"`
	Batch       int     `json:"batch"`
	IPv6        bool    `json:"ipv6"`
	GSO         bool    `json:"gso"` // the server's sends
	// XDP is the server's AF_XDP mode (-xdp): off, native, generic or try;
	// LoadXDP the load's (-load-xdp).
	XDP     string `json:"xdp,omitempty"`
	LoadXDP string `json:"load_xdp,omitempty"`
	// SendGrid is the load's send grid (netbench -send-grid), if any.
	SendGrid string `json:"send_grid,omitempty"`
	// LoadXDPCounters are the load's AF_XDP counters over the window.
	LoadXDPCounters map[string]uint64 `json:"load_xdp_counters,omitempty"`
	// LoadKernelCounted is how many of the replies received the load's
	// XDP program counted without handing them to the load process.
	LoadKernelCounted uint64 `json:"load_kernel_counted,omitempty"`

	MaxSustainedPPS *float64 `json:"max_sustained_pps,omitempty"`
	Steps           []Step   `json:"steps,omitempty"`

	HandshakesPerS  *float64 `json:"handshakes_per_s,omitempty"`
	FloodSentPPS    *float64 `json:"flood_sent_pps,omitempty"`
	ServerDropsPerS *float64 `json:"server_drops_per_s,omitempty"`
	// KernelDropsPerS is what the kernel dropped for the server's sockets
	// per second: under a flood, mostly connection requests it shed.
	KernelDropsPerS *float64 `json:"kernel_drops_per_s,omitempty"`
	FloodPriority   string   `json:"flood_priority,omitempty"` // idle or normal
	FloodGSO        *bool    `json:"flood_gso,omitempty"`      // the flooder sent with UDP GSO
	FloodAt         string   `json:"flood_at,omitempty"`       // server, or sink (the control)
	// ShedOff: the server ran with its kernel shedding of request floods
	// turned off (netbench -no-shed).
	ShedOff bool `json:"shed_off,omitempty"`
	// FloodKind is what the flood sent: requests (forged connection
	// requests from one socket) or payload (junk payload packets from a
	// connected player's address).
	FloodKind string `json:"flood_kind,omitempty"`
	// SourceLimit is the server's kernel per-source limit: off, on, or
	// fallback (asked for, but eBPF was unavailable: netbench -no-bpf).
	SourceLimit string `json:"source_limit,omitempty"`

	LoadSockets    string `json:"load_sockets"` // shared or per-client
	LoadWorkers    int    `json:"load_workers"` // goroutines driving shared sockets
	LoadGOMAXPROCS int    `json:"load_gomaxprocs"`
	LoadCPUs       []int  `json:"load_cpus,omitempty"`
	GoVersion      string `json:"go_version"`
	Started        string `json:"started"` // RFC 3339
	Label          string `json:"label"`   // legend text for plots
	// Groups are the figures of each group of clients when the load mixes
	// transports (netbench -webtransport): udp and webtransport.
	Groups []GroupResult `json:"groups,omitempty"`
	Curve  []CurvePoint  `json:"curve"`
}

// SetServer fills the server fields from a window measured by the server
// process; packets are the datagrams it received.
func (r *Result) SetServer(w *ServerWindow) {
	r.Server = w
	r.ServerCPURatio, r.ServerCPUNsPerDatagram, r.ServerWaitRatio = nil, nil, nil
	if w == nil {
		r.ServerCPUNsPerPacket, r.ServerAllocsPerPacket, r.ServerGCCycles = nil, nil, nil
		return
	}
	gc := w.GCCycles
	r.ServerGCCycles = &gc
	r.TickUs = w.TickUs
	r.ServerCPURatio = CPURatio(w.CPUNanos, w.WindowS, len(w.CPUs))
	if w.WaitNanos >= 0 {
		r.ServerWaitRatio = CPURatio(w.WaitNanos, w.WindowS, len(w.CPUs))
	}
	if d := w.PacketsIn + w.PacketsOut; d > 0 {
		v := float64(w.CPUNanos) / float64(d)
		r.ServerCPUNsPerDatagram = &v
	}
	if w.PacketsIn == 0 {
		return
	}
	cpu := float64(w.CPUNanos) / float64(w.PacketsIn)
	allocs := float64(w.Mallocs) / float64(w.PacketsIn)
	r.ServerCPUNsPerPacket, r.ServerAllocsPerPacket = &cpu, &allocs
}

// LoadWindow is what the load process measured about itself over a
// window: its CPU time and the datagrams its sockets moved.
type LoadWindow struct {
	WindowS   float64
	CPUNanos  int64
	WaitNanos int64 // as ServerWindow.WaitNanos
	Datagrams uint64
	Cores     int // the cores it was pinned to (0: unknown)
	// CoreNanos and ServerCoreNanos are the busy time of the load's and
	// the server's cores over the window (-1: unknown); ServerCores is
	// how many the server had (0: not pinned apart).
	CoreNanos, ServerCoreNanos int64
	ServerCores                int
}

// SetLoad fills the load's CPU fields.
func (r *Result) SetLoad(w LoadWindow) {
	r.LoadCPURatio = CPURatio(w.CPUNanos, w.WindowS, w.Cores)
	r.LoadWaitRatio = nil
	if w.WaitNanos >= 0 {
		r.LoadWaitRatio = CPURatio(w.WaitNanos, w.WindowS, w.Cores)
	}
	r.LoadCoreRatio, r.ServerCoreRatio = nil, nil
	if w.CoreNanos >= 0 && w.Cores > 0 {
		r.LoadCoreRatio = CPURatio(w.CoreNanos, w.WindowS, w.Cores)
	}
	if w.ServerCoreNanos >= 0 && w.ServerCores > 0 {
		r.ServerCoreRatio = CPURatio(w.ServerCoreNanos, w.WindowS, w.ServerCores)
	}
	r.LoadCPUNsPerDatagram = nil
	if w.Datagrams > 0 {
		v := float64(w.CPUNanos) / float64(w.Datagrams)
		r.LoadCPUNsPerDatagram = &v
	}
}

// CPURatio is cpuNanos over windowS seconds of cores cores (0 cores: one),
// or nil without a window.
func CPURatio(cpuNanos int64, windowS float64, cores int) *float64 {
	if windowS <= 0 {
		return nil
	}
	v := float64(cpuNanos) / 1e9 / windowS / float64(max(cores, 1))
	return &v
}

// SaturatedAt is the share of a core above which a side counts as
// saturated.
const SaturatedAt = 0.9

// Busy is how much of its cores a side took over a window: its cores'
// busy time by anything (core), where known. That counts the kernel's
// work for the side outside its process (NAPI threads, softirqs while it
// slept) and other processes on its cores, and leaves out nothing a core
// could still have given. Without it, the process's CPU time plus the
// time its threads waited, runnable, for its cores (wait), which
// overstates: threads of one process pinned to one core, or a NAPI
// thread preempting it, wait for each other while the core is busy
// only once. Nil when nothing is known.
func Busy(cpu, wait, core *float64) *float64 {
	if core != nil {
		v := *core
		return &v
	}
	if cpu == nil {
		return nil
	}
	v := *cpu
	if wait != nil {
		v += *wait
	}
	return &v
}

// Saturation says which side was saturated: a side whose Busy came to
// SaturatedAt of the window wanted all of its core; the load also when it
// skipped sends to keep its schedule (sendLag), or dropped datagrams on
// its own receive path (loadDropped: its AF_XDP rings overflowed), which
// the sweep would otherwise count as the server's loss. Nil (not
// measured) is not saturated.
func Saturation(server, load *float64, sendLag, loadDropped uint64) string {
	busy := func(v *float64) bool { return v != nil && *v >= SaturatedAt }
	s := busy(server)
	l := busy(load) || sendLag > 0 || loadDropped > 0
	switch {
	case s && l:
		return "both"
	case s:
		return "server"
	case l:
		return "load"
	}
	return "neither"
}

// WriteJSONFile writes r, indented, to path.
func (r *Result) WriteJSONFile(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadResultFile reads a Result written by WriteJSONFile.
func ReadResultFile(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	return &r, nil
}

func optFloat(p *float64, format string) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *p)
}

func optPercent(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100**p)
}

// WriteSummary writes the human-readable table of r.
// GroupResult is one group of a mixed load: its clients' echoes over the
// window.
type GroupResult struct {
	Name      string      `json:"name"`
	Clients   int         `json:"clients"`
	Connected int         `json:"connected"`
	Sent      uint64      `json:"sent"`
	Received  uint64      `json:"received"`
	LossRatio float64     `json:"loss_ratio"`
	RTT       Percentiles `json:"rtt_us"`
}

// NewGroupResult summarizes a group's totals.
func NewGroupResult(name string, t *LoadTotals) GroupResult {
	return GroupResult{Name: name, Clients: t.Active, Connected: t.Connected, Sent: t.Sent, Received: t.Received,
		LossRatio: t.LossRatio(), RTT: PercentilesOf(t.Hist)}
}

func (r *Result) WriteSummary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "  %s\t"+format+"\n", append([]any{k}, a...)...) }
	control := ""
	if r.Bare {
		control = ", protocol-free control"
	}
	if r.Reliable {
		control = ", reliable endpoints"
	}
	fmt.Fprintf(tw, "netbench %s against %s (%s%s)\n", r.Mode, r.Target, r.Latency, control)
	row("clients", "%d connected of %d", r.Connected, r.Clients)
	unit := "packet"
	switch {
	case r.HandshakesPerS != nil:
		unit = "handshake"
		row("handshakes", "%.0f per second", *r.HandshakesPerS)
	case r.TickHz > 0:
		row("game", "%d-byte snapshots at %.0f Hz, %d-byte inputs", r.SnapshotBytes, r.TickHz, r.PayloadBytes)
		row("snapshots", "%d owed (%d ticks x %d clients), %d received, %.0f/s", r.Sent, r.Ticks, r.Connected, r.Received, r.DeliveredPPS)
		row("loss", "%.4f%% (%d), %d duplicates, %d reordered; %d clients missed some (worst %.2f%%)",
			100*r.LossRatio, r.Lost, r.Duplicates, r.Reordered, r.ClientsWithLoss, 100*r.WorstClientLoss)
		row("inputs", "%d sent, %.0f/s (send lag %d)", r.Inputs, r.OfferedPPS, r.SendLag)
		if r.Server != nil && r.Server.Ticks > 0 {
			row("server ticks", "%d run, %d skipped, %d inputs received", r.Server.Ticks, r.Server.TicksSkipped, r.Server.Inputs)
		}
		if t := r.TickUs; t != nil {
			row("tick time", "p50 %.0f µs, p99 %.0f µs, max %.0f µs (of %.0f µs)", t.P50, t.P99, t.Max, 1e6/r.TickHz)
		}
	default:
		row("payload", "%d bytes at %.0f Hz per client", r.PayloadBytes, r.RateHz)
		row("offered", "%.0f pps (target %.0f, send lag %d)", r.OfferedPPS, r.TargetPPS, r.SendLag)
		row("delivered", "%.0f pps", r.DeliveredPPS)
		row("loss", "%.4f%% (%d of %d), %d duplicates, %d reordered", 100*r.LossRatio, r.Lost, r.Sent, r.Duplicates, r.Reordered)
	}
	if r.FloodSentPPS != nil {
		at := ""
		if r.FloodAt == "sink" {
			at = " to the drop sink (control)"
		}
		what := "bad requests"
		if r.FloodKind == "payload" {
			what = "junk payloads from a player's address"
		}
		row("flood", "%.0f %s/s sent%s, server dropped %s/s", *r.FloodSentPPS, what, at, optFloat(r.ServerDropsPerS, "%.0f"))
		if r.SourceLimit != "" && r.SourceLimit != "off" {
			row("source limit", "%s", r.SourceLimit)
		}
		if r.KernelDropsPerS != nil {
			row("kernel", "dropped %.0f/s before the server read them (shed requests, per-source limit, full queue)", *r.KernelDropsPerS)
		}
	}
	if r.Server != nil {
		var wt []string
		for k, v := range r.Server.DropReasons {
			if name, ok := strings.CutPrefix(k, "webtransport_"); ok {
				wt = append(wt, fmt.Sprintf("%s %d", name, v))
			}
		}
		if len(r.Groups) > 0 || len(wt) > 0 {
			slices.Sort(wt)
			row("webtransport", "since start: %s", cmp.Or(strings.Join(wt, ", "), "no drops"))
		}
	}
	if l := r.Server.XDPLine(); l != "" {
		row("server xdp", "%s (the window's AF_XDP counters)", l)
	}
	if l := CounterLine(r.LoadXDPCounters); l != "" {
		row("load xdp", "%s (the window's AF_XDP counters)", l)
	}
	if r.LoadKernelCounted > 0 {
		row("load kernel", "%d of the replies received counted in the load's XDP program, unopened", r.LoadKernelCounted)
	}
	for _, g := range r.Groups {
		row("group "+g.Name, "%d connected of %d, loss %.4f%% (%d of %d), rtt p50 %.1f µs, p99 %.1f µs, max %.1f µs",
			g.Connected, g.Clients, 100*g.LossRatio, g.Sent-min(g.Received, g.Sent), g.Sent, g.RTT.P50, g.RTT.P99, g.RTT.Max)
	}
	if f := r.ReliableLoad; f != nil {
		row("reliable load", "%v", f)
	}
	if r.Server != nil && r.Server.Reliable != nil {
		row("reliable server", "%v", r.Server.Reliable)
	}
	if r.MaxSustainedPPS != nil {
		row("max sustained", "%.0f pps", *r.MaxSustainedPPS)
	}
	if r.MaxPlayers != nil {
		row("max players", "%d at %.0f Hz", *r.MaxPlayers, r.TickHz)
	}
	if r.LoadLimited != "" {
		row("not reported", "%s", r.LoadLimited)
	}
	row("server cpu", "%s ns/%s, %s ns/datagram, %s of its core", optFloat(r.ServerCPUNsPerPacket, "%.0f"), unit,
		optFloat(r.ServerCPUNsPerDatagram, "%.0f"), optPercent(r.ServerCPURatio))
	row("load cpu", "%s ns/datagram, %s of its core (1 in %d clients opens replies)",
		optFloat(r.LoadCPUNsPerDatagram, "%.0f"), optPercent(r.LoadCPURatio), max(r.SampleEvery, 1))
	row("cores busy", "server %s, load %s (by anything: the process and the kernel's work on its cores)",
		optPercent(r.ServerCoreRatio), optPercent(r.LoadCoreRatio))
	row("saturated", "%s", r.Saturated)
	row("cpu wait", "server %s, load %s of the window runnable but waiting for their cores (other processes)",
		optPercent(r.ServerWaitRatio), optPercent(r.LoadWaitRatio))
	row("server allocs", "%s /%s", optFloat(r.ServerAllocsPerPacket, "%.4f"), unit)
	gc := "n/a"
	if r.ServerGCCycles != nil {
		gc = fmt.Sprint(*r.ServerGCCycles)
	}
	row("server gc", "%s cycles", gc)
	row("config", "recv=%s batch=%d shards=%d ipv6=%v xdp=%s load_xdp=%s send_grid=%s duration=%.1fs", r.ReceiveMode, r.Batch, r.Shards, r.IPv6, r.XDP, r.LoadXDP,
		cmp.Or(r.SendGrid, "0"), r.DurationS)
	row("machine", "load average %s, cpu pressure %s", r.LoadAvg, optPercent(r.CPUPressure))
	if err := tw.Flush(); err != nil {
		return err
	}
	p := r.RTT
	var b strings.Builder
	fmt.Fprintf(&b, "\n  %-10s %10s %10s %10s %10s %10s\n", "latency", "p50", "p90", "p99", "p99.9", "max")
	fmt.Fprintf(&b, "  %-10s %10.1f %10.1f %10.1f %10.1f %10.1f  µs\n", r.Latency, p.P50, p.P90, p.P99, p.P999, p.Max)
	if len(r.Steps) > 0 {
		first, players := "rate Hz", r.Steps[0].Players > 0
		if players {
			first = "players"
		}
		fmt.Fprintf(&b, "\n  %10s %12s %12s %12s %10s %10s %9s %9s  %s\n", first, "target pps", "offered", "delivered", "loss %", "p99 µs", "server", "load", "")
		fmt.Fprintf(&b, "  %10s %12s %12s %12s %10s %10s %9s %9s\n", "", "", "", "", "", "", "cpu/core", "cpu/core")
		for _, s := range r.Steps {
			verdict := "ok"
			if !s.Sustained {
				verdict = s.Why
			}
			if s.XDP != "" {
				verdict += "  [xdp: " + s.XDP + "]"
			}
			if s.LoadXDP != "" {
				verdict += "  [load xdp: " + s.LoadXDP + "]"
			}
			v := s.RateHz
			if players {
				v = float64(s.Players)
			}
			fmt.Fprintf(&b, "  %10.0f %12.0f %12.0f %12.0f %10.4f %10.1f %9s %9s  %s\n",
				v, s.TargetPPS, s.OfferedPPS, s.DeliveredPPS, 100*s.LossRatio, s.P99Micros,
				cpuCore(s.ServerCPURatio, s.ServerCoreRatio), cpuCore(s.LoadCPURatio, s.LoadCoreRatio), verdict)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cpuCore is a side's process CPU and its cores' busy share, "43/51%".
func cpuCore(cpu, core *float64) string {
	if core == nil {
		return optPercent(cpu)
	}
	c := "n/a"
	if cpu != nil {
		c = fmt.Sprintf("%.0f", 100**cpu)
	}
	return fmt.Sprintf("%s/%.0f%%", c, 100**core)
}
