// Command ratiotable prints a markdown table comparing netbench JSON
// results: each run's numbers and their ratios to the run with the
// baseline receive mode (mmsg by default) at the same payload size and
// client count.
//
//	go run ./scripts/ratiotable [-base mmsg] results/*.json > table.md
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/netcode-go/netcode/bench"
)

type key struct {
	payload, clients int
}

func main() {
	base := flag.String("base", "mmsg", "receive mode the ratios are relative to")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: ratiotable [-base mode] result.json ...")
		os.Exit(2)
	}
	var runs []*bench.Result
	for _, f := range flag.Args() {
		r, err := bench.ReadResultFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ratiotable:", err)
			os.Exit(1)
		}
		runs = append(runs, r)
	}
	if err := write(os.Stdout, runs, *base); err != nil {
		fmt.Fprintln(os.Stderr, "ratiotable:", err)
		os.Exit(1)
	}
}

// throughput is a run's max sustained rate (sweeps) or delivered rate.
func throughput(r *bench.Result) float64 {
	if r.MaxSustainedPPS != nil {
		return *r.MaxSustainedPPS
	}
	return r.DeliveredPPS
}

func ratio(v, base float64) string {
	if base == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", v/base)
}

func opt(p *float64, format string) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *p)
}

func write(w io.Writer, runs []*bench.Result, base string) error {
	baseOf := map[key]*bench.Result{}
	for _, r := range runs {
		if r.ReceiveMode == base {
			baseOf[key{r.PayloadBytes, r.Clients}] = r
		}
	}
	sort.SliceStable(runs, func(i, j int) bool {
		a, b := runs[i], runs[j]
		if a.PayloadBytes != b.PayloadBytes {
			return a.PayloadBytes < b.PayloadBytes
		}
		if a.Clients != b.Clients {
			return a.Clients < b.Clients
		}
		return a.ReceiveMode < b.ReceiveMode
	})
	fmt.Fprintf(w, "| run | recv | payload | clients | max pps | vs %s | p99 µs | vs %s | server ns/pkt | vs %s | allocs/pkt | loss |\n", base, base, base)
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range runs {
		b := baseOf[key{r.PayloadBytes, r.Clients}]
		pps, bpps, cpuRatio, p99Ratio := throughput(r), 0.0, "–", "–"
		if b != nil {
			bpps = throughput(b)
			p99Ratio = ratio(r.RTT.P99, b.RTT.P99)
			if r.ServerCPUNsPerPacket != nil && b.ServerCPUNsPerPacket != nil {
				cpuRatio = ratio(*r.ServerCPUNsPerPacket, *b.ServerCPUNsPerPacket)
			}
		}
		if _, err := fmt.Fprintf(w, "| %s | %s | %d | %d | %.0f | %s | %.1f | %s | %s | %s | %s | %.4f%% |\n",
			r.Label, r.ReceiveMode, r.PayloadBytes, r.Clients, pps, ratio(pps, bpps), r.RTT.P99, p99Ratio,
			opt(r.ServerCPUNsPerPacket, "%.0f"), cpuRatio, opt(r.ServerAllocsPerPacket, "%.4f"), 100*r.LossRatio); err != nil {
			return err
		}
	}
	return nil
}
