//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/webtransport"
	"github.com/netcode-go/netcode/bench"
)

// loader is what the runner needs of a load: a *bench.Load, or the
// groups of a mixed one (-webtransport).
type loader interface {
	Start()
	WaitConnected(timeout time.Duration, stop <-chan struct{}) int
	Active() int
	SetActive(n int) error
	BeginWindow(rateHz float64, start time.Time, d time.Duration) error
	PresealLead(rateHz float64, d time.Duration) time.Duration
	SetRate(rateHz float64)
	Totals() bench.LoadTotals
	Connected() int
	EverConnected() int
	SocketPackets() (in, out uint64)
	Sockets() bench.LoadSockets
	SharedConns() []batchio.Conn
	SampleEvery() int
	ReliableMark(m *bench.ReliableMark)
	Close() error
}

var (
	_ loader = (*bench.Load)(nil)
	_ loader = (*mixedLoad)(nil)
)

// wtDialTimeout bounds one browser-like client's session setup.
const wtDialTimeout = 10 * time.Second

// newLoads makes the run's load: cfg's clients over UDP, or with
// -webtransport N the last N of them over WebTransport sessions to the
// child's listener, as a second group.
func (r *runner) newLoads(cfg bench.LoadConfig) (loader, error) {
	n := r.o.webTransport
	if n == 0 {
		return bench.NewLoad(cfg)
	}
	url := fmt.Sprintf("https://%s%s", r.child.wtAddr, webtransport.DefaultPath)
	hash := r.child.wtHash
	wt := cfg
	wt.Server, wt.Clients, wt.Active = r.child.wtAddr, n, 0
	wt.ClientIDBase = 1 << 32 // apart from the UDP group's ids
	wt.Sockets, wt.Workers, wt.SampleEvery = bench.SocketsAuto, 0, 1
	wt.Dial = func(int) (batchio.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), wtDialTimeout)
		defer cancel()
		return webtransport.Dial(ctx, url, hash)
	}
	m := &mixedLoad{}
	if udp := cfg.Clients - n; udp > 0 {
		cfg.Clients, cfg.Active = udp, 0
		l, err := bench.NewLoad(cfg)
		if err != nil {
			return nil, err
		}
		m.add("udp", l)
	}
	l, err := bench.NewLoad(wt)
	if err != nil {
		m.Close()
		return nil, err
	}
	m.add("webtransport", l)
	return m, nil
}

// mixedLoad runs groups of clients side by side, each its own bench.Load,
// and adds up their figures; groups reports each one's.
type mixedLoad struct {
	names []string
	loads []*bench.Load
}

func (m *mixedLoad) add(name string, l *bench.Load) {
	m.names, m.loads = append(m.names, name), append(m.loads, l)
}

func (m *mixedLoad) Start() {
	for _, l := range m.loads {
		l.Start()
	}
}

func (m *mixedLoad) WaitConnected(timeout time.Duration, stop <-chan struct{}) int {
	deadline := time.Now().Add(timeout)
	n := 0
	for _, l := range m.loads {
		n += l.WaitConnected(max(time.Until(deadline), time.Millisecond), stop)
	}
	return n
}

func (m *mixedLoad) sum(f func(*bench.Load) int) int {
	n := 0
	for _, l := range m.loads {
		n += f(l)
	}
	return n
}

func (m *mixedLoad) Active() int        { return m.sum((*bench.Load).Active) }
func (m *mixedLoad) Connected() int     { return m.sum((*bench.Load).Connected) }
func (m *mixedLoad) EverConnected() int { return m.sum((*bench.Load).EverConnected) }

func (m *mixedLoad) SetActive(int) error {
	return errors.New("netbench: -webtransport does not change the number of players during a run")
}

func (m *mixedLoad) BeginWindow(rateHz float64, start time.Time, d time.Duration) error {
	for _, l := range m.loads {
		if err := l.BeginWindow(rateHz, start, d); err != nil {
			return err
		}
	}
	return nil
}

// PresealLead is the longest of the groups' leads: each seals its own.
func (m *mixedLoad) PresealLead(rateHz float64, d time.Duration) time.Duration {
	var lead time.Duration
	for _, l := range m.loads {
		lead = max(lead, l.PresealLead(rateHz, d))
	}
	return lead
}

func (m *mixedLoad) SetRate(rateHz float64) {
	for _, l := range m.loads {
		l.SetRate(rateHz)
	}
}

// Totals adds up the groups' totals, latencies merged.
func (m *mixedLoad) Totals() bench.LoadTotals {
	var t bench.LoadTotals
	for i, l := range m.loads {
		g := l.Totals()
		if i == 0 {
			t = g
			continue
		}
		t.Elapsed = max(t.Elapsed, g.Elapsed)
		t.Connected += g.Connected
		t.Active += g.Active
		t.Sent += g.Sent
		t.Received += g.Received
		t.Duplicates += g.Duplicates
		t.Reordered += g.Reordered
		t.TooOld += g.TooOld
		t.Bad += g.Bad
		t.SendLag += g.SendLag
		t.Handshakes += g.Handshakes
		t.Failures += g.Failures
		if t.Hist != nil && g.Hist != nil {
			t.Hist.Merge(g.Hist)
		}
	}
	return t
}

// groups reports each group's figures over the current window.
func (m *mixedLoad) groups() []bench.GroupResult {
	out := make([]bench.GroupResult, len(m.loads))
	for i, l := range m.loads {
		t := l.Totals()
		out[i] = bench.NewGroupResult(m.names[i], &t)
	}
	return out
}

func (m *mixedLoad) SocketPackets() (in, out uint64) {
	for _, l := range m.loads {
		i, o := l.SocketPackets()
		in, out = in+i, out+o
	}
	return in, out
}

// Sockets and SharedStats are the first group's: UDP's, if it has
// clients.
func (m *mixedLoad) Sockets() bench.LoadSockets  { return m.loads[0].Sockets() }
func (m *mixedLoad) SharedConns() []batchio.Conn { return m.loads[0].SharedConns() }
func (m *mixedLoad) SampleEvery() int            { return m.loads[0].SampleEvery() }

func (m *mixedLoad) ReliableMark(*bench.ReliableMark) {} // -webtransport excludes -reliable

func (m *mixedLoad) Close() error {
	var errs []error
	for _, l := range m.loads {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}
