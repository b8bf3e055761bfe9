package main

import (
	"fmt"
	"io"
	"math"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/netcode-go/netcode/engine"
)

type event struct {
	at   time.Duration
	what string
}

// Report is what a run saw. Its fields are filled by Run; the figures are
// computed from the players' records once they have returned.
type Report struct {
	cfg      Config
	logDir   string
	timeline []event
	servers  []netip.AddrPort
	crowd    *crowd

	killed, drained               netip.AddrPort
	killedPlayers, drainedPlayers int
	killAt, drainAt, end          time.Time
	drainExit                     int
}

// failover is what happened to the players of one server after an event.
type failover struct {
	players   int             // in a session on the server at the event
	delays    []time.Duration // from the event to each one's next session
	endStates map[engine.ClientState]int
	never     int // no session afterwards
}

func (r *Report) failover(server netip.AddrPort, at time.Time) failover {
	f := failover{endStates: map[engine.ClientState]int{}}
	if r.crowd == nil || at.IsZero() {
		return f
	}
	for _, p := range r.crowd.players {
		for i, s := range p.sessions {
			if s.server != server || s.connected.After(at) || (!s.ended.IsZero() && s.ended.Before(at)) {
				continue
			}
			f.players++
			if s.ended.IsZero() {
				f.never++ // still on the dead or drained server: cannot be
				continue
			}
			f.endStates[s.endState]++
			if i+1 < len(p.sessions) {
				f.delays = append(f.delays, p.sessions[i+1].connected.Sub(at))
			} else {
				f.never++
			}
		}
	}
	slices.Sort(f.delays)
	return f
}

// totals are the whole run's counts.
type totals struct {
	connects, failovers, tokens, echoes int
	refused                             map[int]int
	failed                              map[engine.ClientState]int
	neverBack                           int // players not in a session at the end
	stale                               int // tokens naming a server after staleAfter
}

func (r *Report) totals() totals {
	t := totals{refused: map[int]int{}, failed: map[engine.ClientState]int{}}
	if r.crowd == nil {
		return t
	}
	for _, p := range r.crowd.players {
		t.connects += len(p.sessions)
		t.tokens += len(p.tokens)
		t.echoes += p.echoes
		for i, s := range p.sessions {
			if !s.ended.IsZero() && i+1 < len(p.sessions) {
				t.failovers++
			}
		}
		for k, v := range p.refused {
			t.refused[k] += v
		}
		for k, v := range p.failed {
			t.failed[k] += v
		}
		if n := len(p.sessions); n == 0 || !p.sessions[n-1].ended.IsZero() {
			t.neverBack++
		}
		for _, tok := range p.tokens {
			if names(tok.servers, r.killed) && !r.killAt.IsZero() && tok.at.After(r.killAt.Add(staleAfter)) ||
				names(tok.servers, r.drained) && !r.drainAt.IsZero() && tok.at.After(r.drainAt.Add(staleAfter)) {
				t.stale++
			}
		}
	}
	return t
}

func names(servers []string, a netip.AddrPort) bool {
	return a.IsValid() && slices.Contains(servers, a.String())
}

// Problems lists what makes the run a failure.
func (r *Report) Problems() []string {
	var out []string
	t := r.totals()
	if t.neverBack > 0 {
		out = append(out, fmt.Sprintf("%d clients never came back", t.neverBack))
	}
	if t.stale > 0 {
		out = append(out, fmt.Sprintf("%d tokens named the killed or drained server %v after it stopped", t.stale, staleAfter))
	}
	k := r.failover(r.killed, r.killAt)
	if k.never > 0 {
		out = append(out, fmt.Sprintf("%d of the killed server's %d clients did not reconnect elsewhere", k.never, k.players))
	}
	d := r.failover(r.drained, r.drainAt)
	if d.never > 0 {
		out = append(out, fmt.Sprintf("%d of the drained server's %d clients did not reconnect elsewhere", d.never, d.players))
	}
	if unclean := d.players - d.endStates[engine.Disconnected]; unclean > 0 {
		out = append(out, fmt.Sprintf("%d of the drained server's %d clients were not disconnected cleanly (%s)", unclean, d.players, stateCounts(d.endStates)))
	}
	if r.drainAt.IsZero() || r.drainExit != 0 {
		out = append(out, fmt.Sprintf("the drained server did not exit 0 (status %d)", r.drainExit))
	}
	return out
}

// Print writes the summary.
func (r *Report) Print(w io.Writer) {
	t := r.totals()
	fmt.Fprintf(w, "\nsummary: %d servers, %d clients at %g Hz, token timeout %d s, drain grace %v\n",
		r.cfg.Servers, r.cfg.Clients, r.cfg.RateHz, r.cfg.TimeoutSeconds, r.cfg.DrainGrace)
	fmt.Fprintf(w, "  connects          %d (%d first connects, %d failovers)\n", t.connects, t.connects-t.failovers, t.failovers)
	fmt.Fprintf(w, "  tokens issued     %d\n", t.tokens)
	fmt.Fprintf(w, "  tokens refused    %d%s\n", sum(t.refused), statusCounts(t.refused))
	fmt.Fprintf(w, "  connects failed   %d (%s)\n", sum(t.failed), stateCounts(t.failed))
	fmt.Fprintf(w, "  echoes received   %d\n", t.echoes)
	for _, e := range []struct {
		name   string
		server netip.AddrPort
		at     time.Time
	}{{"killed", r.killed, r.killAt}, {"drained", r.drained, r.drainAt}} {
		f := r.failover(e.server, e.at)
		if f.players == 0 && e.at.IsZero() {
			continue
		}
		fmt.Fprintf(w, "  %-8s %-21v %d clients; ended %s; back elsewhere after p50 %s, p99 %s, max %s\n",
			e.name, e.server, f.players, stateCounts(f.endStates), pct(f.delays, 0.50), pct(f.delays, 0.99), pct(f.delays, 1))
	}
	fmt.Fprintf(w, "  stale tokens      %d (naming a server %v after it was killed or began draining)\n", t.stale, staleAfter)
	fmt.Fprintf(w, "  never came back   %d\n", t.neverBack)
	if p := r.Problems(); len(p) > 0 {
		fmt.Fprintf(w, "  FAILED: %s (logs in %s)\n", strings.Join(p, "; "), r.logDir)
	}
}

func pct(d []time.Duration, q float64) string {
	if len(d) == 0 {
		return "-"
	}
	i := int(math.Ceil(q*float64(len(d)))) - 1
	return d[max(i, 0)].Round(time.Millisecond).String()
}

func sum[K comparable](m map[K]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

func statusCounts(m map[int]int) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		name := fmt.Sprintf("HTTP %d", k)
		if k == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", name, m[k]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func stateCounts(m map[engine.ClientState]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]engine.ClientState, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%v %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
