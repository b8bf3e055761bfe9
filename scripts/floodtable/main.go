// Command floodtable summarises netbench flood experiments: runs without a
// flood, with the flood at the server, and with the same flood at the drop
// sink (the control: the same cost to the load generator's core, none to
// the server), and optionally with the flood at a server whose kernel
// shedding is off (noshed), and with the server's kernel per-source limit
// on (limit) or asked for where eBPF could not load (fallback). It prints every run and the median of each kind, with p99
// ratios to the runs without a flood and to the control.
//
//	go run ./scripts/floodtable results/*.json > table.md
package main

import (
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/netcode-go/netcode/bench"
)

// kinds in the order they are printed.
var kinds = []string{"none", "server", "noshed", "limit", "fallback", "sink"}

func kindOf(r *bench.Result) string {
	switch {
	case r.FloodSentPPS == nil:
		return "none"
	case r.FloodAt == "sink":
		return "sink"
	case r.SourceLimit == "on":
		return "limit"
	case r.SourceLimit == "fallback":
		return "fallback"
	case r.ShedOff:
		return "noshed"
	default:
		return "server"
	}
}

type row struct {
	floodSent, serverDrops, kernelDrops, loss, p50, p99, p999 float64
}

func rowOf(r *bench.Result) row {
	x := row{loss: 100 * r.LossRatio, p50: r.RTT.P50, p99: r.RTT.P99, p999: r.RTT.P999}
	if r.FloodSentPPS != nil {
		x.floodSent = *r.FloodSentPPS
	}
	if r.ServerDropsPerS != nil {
		x.serverDrops = *r.ServerDropsPerS
	}
	if r.KernelDropsPerS != nil {
		x.kernelDrops = *r.KernelDropsPerS
	}
	return x
}

func median(rows []row, f func(row) float64) float64 {
	v := make([]float64, len(rows))
	for i, r := range rows {
		v[i] = f(r)
	}
	sort.Float64s(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: floodtable result.json ...")
		os.Exit(2)
	}
	byKind := map[string][]row{}
	w := os.Stdout
	fmt.Fprintln(w, "| run | flood at | flood sent/s | server dropped/s | kernel dropped/s | players' loss % | p50 µs | p99 µs | p99.9 µs |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, path := range os.Args[1:] {
		r, err := bench.ReadResultFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "floodtable:", err)
			os.Exit(1)
		}
		k, x := kindOf(r), rowOf(r)
		byKind[k] = append(byKind[k], x)
		printRow(w, r.Label, k, x)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| median of | runs | flood sent/s | server dropped/s | kernel dropped/s | players' loss % | p50 µs | p99 µs | p99.9 µs | p99 vs none | p99 vs sink |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	p99 := map[string]float64{}
	for _, k := range kinds {
		if rows := byKind[k]; len(rows) > 0 {
			p99[k] = median(rows, func(r row) float64 { return r.p99 })
		}
	}
	for _, k := range kinds {
		rows := byKind[k]
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.0f | %.4f | %.1f | %.1f | %.1f | %s | %s |\n", k, len(rows),
			median(rows, func(r row) float64 { return r.floodSent }),
			median(rows, func(r row) float64 { return r.serverDrops }),
			median(rows, func(r row) float64 { return r.kernelDrops }),
			median(rows, func(r row) float64 { return r.loss }),
			median(rows, func(r row) float64 { return r.p50 }),
			p99[k],
			median(rows, func(r row) float64 { return r.p999 }),
			ratio(p99[k], p99["none"]), ratio(p99[k], p99["sink"]))
	}
}

func printRow(w io.Writer, label, kind string, x row) {
	fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %.0f | %.4f | %.1f | %.1f | %.1f |\n",
		label, kind, x.floodSent, x.serverDrops, x.kernelDrops, x.loss, x.p50, x.p99, x.p999)
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}
