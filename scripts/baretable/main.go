// Command baretable prints one markdown table that puts each netbench
// run beside its protocol-free control (-bare): the same shape (mode,
// clients, sizes, rate or tick) with netcode and without, over several
// rounds. Each cell is the median over rounds with the spread (lowest
// to highest) after it; the ratio columns divide the netcode median by
// the bare one.
//
//	go run ./scripts/baretable results/*.json > table.md
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/netcode-go/netcode/bench"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: baretable result.json ...")
		os.Exit(2)
	}
	var runs []*bench.Result
	for _, f := range os.Args[1:] {
		r, err := bench.ReadResultFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "baretable:", err)
			os.Exit(1)
		}
		runs = append(runs, r)
	}
	if err := write(os.Stdout, runs); err != nil {
		fmt.Fprintln(os.Stderr, "baretable:", err)
		os.Exit(1)
	}
}

// shape is what a run and its control have in common.
type shape struct {
	mode    string // echo, sweep, game, game-sweep
	clients int    // for sweeps: the starting count
	payload int    // echo payload or game input
	snap    int
	rate    float64 // echo rate or tick rate
}

func shapeOf(r *bench.Result) shape {
	s := shape{mode: r.Mode, clients: r.Clients, payload: r.PayloadBytes, snap: r.SnapshotBytes, rate: r.RateHz}
	if r.TickHz > 0 {
		s.rate = r.TickHz
	}
	if len(r.Steps) > 0 {
		s.clients = r.Steps[0].Players
		if s.clients == 0 {
			s.clients = r.Clients
		}
		if r.MaxPlayers == nil {
			s.rate = r.Steps[0].RateHz // an echo sweep starts at -rate
		}
	}
	return s
}

func (s shape) String() string {
	switch s.mode {
	case "game-sweep":
		return fmt.Sprintf("game sweep, %.0f Hz, %d B snapshots, %d B inputs", s.rate, s.snap, s.payload)
	case "sweep":
		return fmt.Sprintf("echo sweep, %d clients, %d B", s.clients, s.payload)
	case "game":
		return fmt.Sprintf("game, %d clients, %.0f Hz, %d B snapshots", s.clients, s.rate, s.snap)
	}
	return fmt.Sprintf("%s, %d clients, %.0f Hz, %d B", s.mode, s.clients, s.rate, s.payload)
}

// capacity is what a run carried: a game sweep's most players, an echo
// sweep's highest sustained rate, or a fixed run's delivered packets per
// second.
func capacity(r *bench.Result) float64 {
	switch {
	case r.MaxPlayers != nil:
		return float64(*r.MaxPlayers)
	case r.MaxSustainedPPS != nil:
		return *r.MaxSustainedPPS
	}
	return r.DeliveredPPS
}

func deref(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

// stat is a metric over rounds: its median and spread, -1 where unknown.
type stat struct{ med, lo, hi float64 }

func statOf(runs []*bench.Result, f func(*bench.Result) float64) stat {
	var v []float64
	for _, r := range runs {
		if x := f(r); x >= 0 {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return stat{-1, -1, -1}
	}
	sort.Float64s(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return stat{m, v[0], v[len(v)-1]}
}

func (s stat) format(scale float64, digits int) string {
	if s.med < 0 {
		return "–"
	}
	f := func(x float64) string { return fmt.Sprintf("%.*f", digits, x*scale) }
	if s.lo == s.hi {
		return f(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.med), f(s.lo), f(s.hi))
}

func ratio(a, b stat) string {
	if a.med < 0 || b.med <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a.med/b.med)
}

// saturated lists the sides the runs named, with counts: "server 2, load 1".
func saturated(runs []*bench.Result) string {
	n := map[string]int{}
	for _, r := range runs {
		if r.Saturated != "" {
			n[r.Saturated]++
		}
	}
	var parts []string
	for _, k := range []string{"server", "load", "both", "neither"} {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
		}
	}
	return strings.Join(parts, ", ")
}

func write(w io.Writer, runs []*bench.Result) error {
	type group struct {
		netcode, bare []*bench.Result
	}
	groups := map[shape]*group{}
	var order []shape
	for _, r := range runs {
		s := shapeOf(r)
		g := groups[s]
		if g == nil {
			g = &group{}
			groups[s] = g
			order = append(order, s)
		}
		if r.Bare {
			g.bare = append(g.bare, r)
		} else {
			g.netcode = append(g.netcode, r)
		}
	}
	rank := map[string]int{"game-sweep": 0, "sweep": 1, "game": 2, "echo": 3}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if rank[a.mode] != rank[b.mode] {
			return rank[a.mode] < rank[b.mode]
		}
		if a.clients != b.clients {
			return a.clients < b.clients
		}
		return a.rate < b.rate
	})
	fmt.Fprintln(w, "| shape | rounds | carried: netcode | bare | ratio | p99 µs: netcode | bare | ratio | loss %: netcode | bare | server ns/datagram: netcode | bare | ratio | load ns/datagram (netcode) | server / load CPU (netcode) | waited for the core: server / load | saturated (netcode) | load average |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	for _, s := range order {
		g := groups[s]
		capN, capB := statOf(g.netcode, capacity), statOf(g.bare, capacity)
		p99N := statOf(g.netcode, func(r *bench.Result) float64 { return r.RTT.P99 })
		p99B := statOf(g.bare, func(r *bench.Result) float64 { return r.RTT.P99 })
		lossN := statOf(g.netcode, func(r *bench.Result) float64 { return r.LossRatio })
		lossB := statOf(g.bare, func(r *bench.Result) float64 { return r.LossRatio })
		srvN := statOf(g.netcode, func(r *bench.Result) float64 { return deref(r.ServerCPUNsPerDatagram) })
		srvB := statOf(g.bare, func(r *bench.Result) float64 { return deref(r.ServerCPUNsPerDatagram) })
		loadN := statOf(g.netcode, func(r *bench.Result) float64 { return deref(r.LoadCPUNsPerDatagram) })
		cpuS := statOf(g.netcode, func(r *bench.Result) float64 { return deref(r.ServerCPURatio) })
		cpuL := statOf(g.netcode, func(r *bench.Result) float64 { return deref(r.LoadCPURatio) })
		waitS := statOf(append(g.netcode[:len(g.netcode):len(g.netcode)], g.bare...), func(r *bench.Result) float64 { return deref(r.ServerWaitRatio) })
		waitL := statOf(append(g.netcode[:len(g.netcode):len(g.netcode)], g.bare...), func(r *bench.Result) float64 { return deref(r.LoadWaitRatio) })
		var avgs []string
		for _, r := range append(g.netcode[:len(g.netcode):len(g.netcode)], g.bare...) {
			if f := strings.Fields(r.LoadAvg); len(f) > 0 {
				avgs = append(avgs, f[0])
			}
		}
		if _, err := fmt.Fprintf(w, "| %s | %d + %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s | %s | %s |\n",
			s, len(g.netcode), len(g.bare),
			capN.format(1, 0), capB.format(1, 0), ratio(capN, capB),
			p99N.format(1, 0), p99B.format(1, 0), ratio(p99N, p99B),
			lossN.format(100, 3), lossB.format(100, 3),
			srvN.format(1, 0), srvB.format(1, 0), ratio(srvN, srvB),
			loadN.format(1, 0),
			cpuS.format(100, 0), cpuL.format(100, 0),
			waitS.format(100, 0), waitL.format(100, 0),
			saturated(g.netcode), strings.Join(avgs, " ")); err != nil {
			return err
		}
	}
	return nil
}
