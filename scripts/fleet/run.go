package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"syscall"
	"time"
)

// staleAfter is how long after a server died or started draining the
// token service may still name it: its directory reuses a round of probes
// for 1 s and gives a probe 1 s.
const staleAfter = 2500 * time.Millisecond

// ramp is how long the clients take to arrive.
const ramp = 3 * time.Second

// Run starts the fleet, lets the clients play, kills one server and drains
// another, waits for every client to be back and reports. Timeline events
// are written to progress as they happen.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dir, keep := cfg.LogDir, true
	if dir == "" {
		d, err := os.MkdirTemp("", "netcode-fleet-")
		if err != nil {
			return nil, err
		}
		dir, keep = d, false
	}
	rep := &Report{cfg: cfg, logDir: dir}
	t0 := time.Now()
	mark := func(format string, args ...any) {
		e := event{at: time.Since(t0), what: fmt.Sprintf(format, args...)}
		rep.timeline = append(rep.timeline, e)
		fmt.Fprintf(progress, "%8.3fs  %s\n", e.at.Seconds(), e.what)
	}

	f, err := startFleet(ctx, cfg, dir)
	if err != nil {
		return nil, fmt.Errorf("%w (logs in %s)", err, dir)
	}
	defer func() {
		f.close()
		if !keep && len(rep.Problems()) == 0 {
			os.RemoveAll(dir)
		}
	}()
	for _, s := range f.servers {
		rep.servers = append(rep.servers, s.udp)
	}
	mark("%d servers ready (%v), token service ready", len(f.servers), rep.servers)

	cctx, stopClients := context.WithCancel(ctx)
	defer stopClients()
	cr := startCrowd(cctx, cfg.Clients, f.url, cfg.RateHz, ramp)
	rep.crowd = cr
	total := func(m map[netip.AddrPort]int, skip ...netip.AddrPort) (n int) {
		for k, v := range m {
			if !slices.Contains(skip, k) {
				n += v
			}
		}
		return n
	}
	if err := until(ctx, 30*time.Second, func() bool { return total(cr.online()) == cfg.Clients }); err != nil {
		stopClients()
		cr.wait()
		return rep, fmt.Errorf("%d of %d clients connected within 30 s (logs in %s)", total(cr.online()), cfg.Clients, dir)
	}
	tAll := time.Now()
	mark("all %d clients connected: %s", cfg.Clients, spread(cr.online(), rep.servers))

	// The victims are the servers with the most players then.
	busiest := func(skip ...*proc) *proc {
		on := cr.online()
		var best *proc
		for _, s := range f.servers {
			if !slices.Contains(skip, s) && (best == nil || on[s.udp] > on[best.udp]) {
				best = s
			}
		}
		return best
	}
	if !sleepUntil(ctx, tAll.Add(cfg.KillAt)) {
		return rep, ctx.Err()
	}
	killed := busiest()
	rep.killed, rep.killedPlayers = killed.udp, cr.online()[killed.udp]
	killed.signal(syscall.SIGKILL)
	rep.killAt = time.Now()
	mark("SIGKILL %s (%s, %d players)", killed.name, killed.udp, rep.killedPlayers)

	if !sleepUntil(ctx, tAll.Add(cfg.DrainAt)) {
		return rep, ctx.Err()
	}
	drained := busiest(killed)
	rep.drained, rep.drainedPlayers = drained.udp, cr.online()[drained.udp]
	drained.signal(syscall.SIGTERM)
	rep.drainAt = time.Now()
	mark("SIGTERM %s (%s, %d players): drain, grace %v", drained.name, drained.udp, rep.drainedPlayers, cfg.DrainGrace)

	back := func() bool {
		on := cr.online()
		return on[killed.udp] == 0 && on[drained.udp] == 0 && total(on) == cfg.Clients
	}
	select {
	case <-drained.exited:
	case <-time.After(cfg.DrainGrace + stopWait):
	}
	if drained.cmd.ProcessState != nil {
		rep.drainExit = drained.cmd.ProcessState.ExitCode()
		mark("%s exited with status %d", drained.name, rep.drainExit)
	} else {
		rep.drainExit = -1
		mark("%s still running %v after SIGTERM", drained.name, cfg.DrainGrace+stopWait)
	}
	if err := until(ctx, cfg.Settle, back); err != nil {
		mark("after %v: %d of %d clients back: %s", cfg.Settle, total(cr.online(), killed.udp, drained.udp), cfg.Clients, spread(cr.online(), rep.servers))
	} else {
		mark("every client back on the survivors: %s", spread(cr.online(), rep.servers))
	}
	stopClients()
	if errs := cr.wait(); len(errs) > 0 {
		return rep, fmt.Errorf("%d clients failed, the first: %w", len(errs), errs[0])
	}
	rep.end = time.Now()
	mark("clients closed")
	return rep, nil
}

// until polls cond every 20 ms until it holds or within passes.
func until(ctx context.Context, within time.Duration, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// sleepUntil sleeps until t and reports false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(t)):
		return true
	}
}

// spread formats how many players each server has.
func spread(on map[netip.AddrPort]int, servers []netip.AddrPort) string {
	s := ""
	for i, a := range servers {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("server-%d %d", i+1, on[a])
	}
	return s
}
