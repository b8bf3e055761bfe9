package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
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
	Mallocs     uint64 `json:"mallocs"`
	GCCycles    uint32 `json:"gc_cycles"`
	Connected   int    `json:"connected"`
	Connects    uint64 `json:"connects"`
	ReceiveMode string `json:"receive_mode"`
	Batch       int    `json:"batch"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	CPUs        []int  `json:"cpus,omitempty"` // the cores it was pinned to
	// DropReasons names the reasons of the window's drops, with counts.
	DropReasons map[string]uint64 `json:"drop_reasons,omitempty"`
}

// Step is one offered load of a sweep.
type Step struct {
	RateHz       float64 `json:"rate_hz"`
	TargetPPS    float64 `json:"target_pps"`
	OfferedPPS   float64 `json:"offered_pps"`
	DeliveredPPS float64 `json:"delivered_pps"`
	LossRatio    float64 `json:"loss_ratio"`
	P99Micros    float64 `json:"p99_us"`
	Sustained    bool    `json:"sustained"`
	// Why is set when the step was not sustained.
	Why string `json:"why,omitempty"`
}

// Result is a run's report; its JSON form is what -json writes and what
// -plot and the comparison table read. Server measurements are nil (null)
// when the server ran elsewhere (-target).
type Result struct {
	Mode         string  `json:"mode"` // echo, sweep, handshake, flood
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
	// Latency says what RTT measures: "echo" (payload round trip) or
	// "handshake" (connect to connected).
	Latency string      `json:"latency"`
	RTT     Percentiles `json:"rtt_us"`

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

	LoadSockets    string       `json:"load_sockets"` // shared or per-client
	LoadWorkers    int          `json:"load_workers"` // goroutines driving shared sockets
	LoadGOMAXPROCS int          `json:"load_gomaxprocs"`
	LoadCPUs       []int        `json:"load_cpus,omitempty"`
	GoVersion      string       `json:"go_version"`
	Started        string       `json:"started"` // RFC 3339
	Label          string       `json:"label"`   // legend text for plots
	Curve          []CurvePoint `json:"curve"`
}

// SetServer fills the server fields from a window measured by the server
// process; packets are the datagrams it received.
func (r *Result) SetServer(w *ServerWindow) {
	r.Server = w
	if w == nil {
		r.ServerCPUNsPerPacket, r.ServerAllocsPerPacket, r.ServerGCCycles = nil, nil, nil
		return
	}
	gc := w.GCCycles
	r.ServerGCCycles = &gc
	if w.PacketsIn == 0 {
		return
	}
	cpu := float64(w.CPUNanos) / float64(w.PacketsIn)
	allocs := float64(w.Mallocs) / float64(w.PacketsIn)
	r.ServerCPUNsPerPacket, r.ServerAllocsPerPacket = &cpu, &allocs
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

// WriteSummary writes the human-readable table of r.
func (r *Result) WriteSummary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "  %s\t"+format+"\n", append([]any{k}, a...)...) }
	fmt.Fprintf(tw, "netbench %s against %s (%s)\n", r.Mode, r.Target, r.Latency)
	row("clients", "%d connected of %d", r.Connected, r.Clients)
	unit := "packet"
	if r.HandshakesPerS != nil {
		unit = "handshake"
		row("handshakes", "%.0f per second", *r.HandshakesPerS)
	} else {
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
		row("flood", "%.0f bad requests/s sent%s, server dropped %s/s", *r.FloodSentPPS, at, optFloat(r.ServerDropsPerS, "%.0f"))
		if r.KernelDropsPerS != nil {
			row("kernel", "dropped %.0f/s before the server read them (shed requests, full queue)", *r.KernelDropsPerS)
		}
	}
	if r.MaxSustainedPPS != nil {
		row("max sustained", "%.0f pps", *r.MaxSustainedPPS)
	}
	row("server cpu", "%s ns/%s", optFloat(r.ServerCPUNsPerPacket, "%.0f"), unit)
	row("server allocs", "%s /%s", optFloat(r.ServerAllocsPerPacket, "%.4f"), unit)
	gc := "n/a"
	if r.ServerGCCycles != nil {
		gc = fmt.Sprint(*r.ServerGCCycles)
	}
	row("server gc", "%s cycles", gc)
	row("config", "recv=%s batch=%d shards=%d ipv6=%v duration=%.1fs", r.ReceiveMode, r.Batch, r.Shards, r.IPv6, r.DurationS)
	if err := tw.Flush(); err != nil {
		return err
	}
	p := r.RTT
	var b strings.Builder
	fmt.Fprintf(&b, "\n  %-10s %10s %10s %10s %10s %10s\n", "latency", "p50", "p90", "p99", "p99.9", "max")
	fmt.Fprintf(&b, "  %-10s %10.1f %10.1f %10.1f %10.1f %10.1f  µs\n", r.Latency, p.P50, p.P90, p.P99, p.P999, p.Max)
	if len(r.Steps) > 0 {
		fmt.Fprintf(&b, "\n  %10s %12s %12s %12s %10s %10s  %s\n", "rate Hz", "target pps", "offered", "delivered", "loss %", "p99 µs", "")
		for _, s := range r.Steps {
			verdict := "ok"
			if !s.Sustained {
				verdict = s.Why
			}
			fmt.Fprintf(&b, "  %10.0f %12.0f %12.0f %12.0f %10.4f %10.1f  %s\n",
				s.RateHz, s.TargetPPS, s.OfferedPPS, s.DeliveredPPS, 100*s.LossRatio, s.P99Micros, verdict)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
