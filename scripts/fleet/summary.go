package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// print writes the summary.
func (r *report) print(w io.Writer) {
	line := func(name, format string, args ...any) {
		fmt.Fprintf(w, "  %-22s %s\n", name, fmt.Sprintf(format, args...))
	}
	fmt.Fprintln(w, "summary")
	line("players", "%d: %d playing at the end, %d never came back", r.players, r.playing, r.players-r.playing)
	line("connects", "%d (%d to a server after the token's first); %d rejoins", r.connects, r.fallbacks, r.rejoins)
	line("failovers", "%d: %d from the killed server, %d from the drained one",
		len(r.killOutcome.back)+len(r.drainOutcome.back), len(r.killOutcome.back), len(r.drainOutcome.back))
	for _, ev := range []struct {
		e *event
		o outcome
	}{{r.kill, r.killOutcome}, {r.drain, r.drainOutcome}} {
		if ev.e == nil {
			continue
		}
		o := ev.o
		line(ev.e.kind+" "+ev.e.name, "%d players: %d timed out, %d disconnected cleanly, %d other; %d not back",
			len(ev.e.affected), o.timedOut, o.clean, o.otherEnd, o.missing)
		line("  "+ev.e.kind+" → back", "%s", percentiles(o.back))
		line("  loss → back", "%s", percentiles(o.sinceLoss))
		line("  spread", "%s", r.spread(o.landed))
		line("  stale offers", "%d tokens still listing %s after the directory's cache time", o.stale, ev.e.name)
	}
	if r.drain != nil && r.drainExit > 0 {
		line("drain → exit", "%.2f s (%s)", r.drainExit.Seconds(), exitText(r.drainErr))
	}
	svc := func(n int) string {
		if n < 0 {
			return ""
		}
		return fmt.Sprintf(" (token service: %d)", n)
	}
	line("tokens issued", "%d%s", r.issued, svc(r.svcIssued))
	refused := 0
	var by []string
	for _, status := range slices.Sorted(maps.Keys(r.refused)) {
		refused += r.refused[status]
		by = append(by, fmt.Sprintf("%d×%d", r.refused[status], status))
	}
	detail := ""
	if len(by) > 0 {
		detail = " [" + strings.Join(by, ", ") + "]"
	}
	line("tokens refused", "%d%s%s; %d requests failed", refused, detail, svc(r.svcRefused), r.failed)
	line("payloads", "%d sent, %d echoed", r.sent, r.echoed)
	line("elapsed", "%.1f s", r.elapsed.Seconds())
	if len(r.failures) == 0 {
		fmt.Fprintln(w, "PASS")
		return
	}
	for _, f := range r.failures {
		fmt.Fprintln(w, "FAIL:", f)
	}
}

// spread formats where an event's players came back, per server, and the
// most-loaded server's share of them.
func (r *report) spread(landed map[netip.AddrPort]int) string {
	total, most := 0, 0
	var parts []string
	for _, a := range r.order {
		if n, ok := landed[a]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", r.names[a], n))
			total += n
			most = max(most, n)
		}
	}
	if total == 0 {
		return "none back"
	}
	return fmt.Sprintf("%s; most-loaded %.0f%%", strings.Join(parts, ", "), 100*float64(most)/float64(total))
}

// percentiles formats p50, p99 and the max of ds (nearest rank).
func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Sorted(slices.Values(ds))
	at := func(q float64) time.Duration {
		k := int(math.Ceil(q*float64(len(s)))) - 1
		return s[min(max(k, 0), len(s)-1)]
	}
	return fmt.Sprintf("p50 %.3f s, p99 %.3f s, max %.3f s (n=%d)", at(0.50).Seconds(), at(0.99).Seconds(), s[len(s)-1].Seconds(), len(s))
}
