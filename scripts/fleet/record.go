package main

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/netcode-go/netcode/engine"
)

// recorder is what the players report: every token, connect and lost
// session, per player, and the totals. Players write it from their
// goroutines; the scenario reads it.
type recorder struct {
	start time.Time

	mu      sync.Mutex
	players []playerLog
	// Token requests by outcome: issued (200), refused (any other
	// status, by status) and failed (no answer).
	issued    int
	refused   map[int]int
	failed    int
	wrongID   int // tokens for another client id than the caller's
	connects  int
	fallbacks int // connects to a server other than the token's first
	rejoins   int
}

// playerLog is one player's history.
type playerLog struct {
	// at is the server the player talks to (connecting or connected);
	// connected says whether it has a slot there.
	at        netip.AddrPort
	connected bool
	tokens    []tokenRec
	connects  []connectRec
	losses    []lossRec
	sent      uint64
	received  uint64
	lastEcho  time.Time
	// rejoining is set when the player is asked to leave and join again,
	// and cleared at its next connect.
	rejoining bool
}

type tokenRec struct {
	at      time.Time
	servers []netip.AddrPort
}

type connectRec struct {
	at     time.Time
	server netip.AddrPort
}

// lossRec is a session that ended without the player asking: the state
// says how (Disconnected: the server's disconnect packets; an error state:
// a timeout or a denial).
type lossRec struct {
	at     time.Time
	server netip.AddrPort
	state  engine.ClientState
}

func newRecorder(players int) *recorder {
	return &recorder{start: time.Now(), players: make([]playerLog, players), refused: make(map[int]int)}
}

func (r *recorder) token(i int, servers []netip.AddrPort, idOK bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.issued++
	if !idOK {
		r.wrongID++
	}
	r.players[i].tokens = append(r.players[i].tokens, tokenRec{time.Now(), servers})
}

func (r *recorder) refusal(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if status == 0 {
		r.failed++
	} else {
		r.refused[status]++
	}
}

// attempt records the server a player is now trying or connected to.
func (r *recorder) attempt(i int, server netip.AddrPort) {
	r.mu.Lock()
	r.players[i].at = server
	r.mu.Unlock()
}

func (r *recorder) connect(i int, server, first netip.AddrPort) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := &r.players[i]
	p.at, p.connected, p.rejoining = server, true, false
	p.connects = append(p.connects, connectRec{time.Now(), server})
	r.connects++
	if server != first {
		r.fallbacks++
	}
}

func (r *recorder) lost(i int, server netip.AddrPort, state engine.ClientState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := &r.players[i]
	p.at, p.connected = netip.AddrPort{}, false
	p.losses = append(p.losses, lossRec{time.Now(), server, state})
}

// left records a session the player ended itself (at the end of the run).
func (r *recorder) left(i int) {
	r.mu.Lock()
	r.players[i].at, r.players[i].connected = netip.AddrPort{}, false
	r.mu.Unlock()
}

func (r *recorder) traffic(i int, sent, received uint64, lastEcho time.Time) {
	r.mu.Lock()
	p := &r.players[i]
	p.sent, p.received, p.lastEcho = sent, received, lastEcho
	r.mu.Unlock()
}

// on returns the players talking to server now.
func (r *recorder) on(server netip.AddrPort) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []int
	for i := range r.players {
		if r.players[i].at == server {
			ids = append(ids, i)
		}
	}
	return ids
}

// census returns how many players are connected to each of servers and
// how many are connected at all.
func (r *recorder) census(servers []netip.AddrPort) (per []int, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	per = make([]int, len(servers))
	for i := range r.players {
		p := &r.players[i]
		if !p.connected {
			continue
		}
		total++
		if k := slices.Index(servers, p.at); k >= 0 {
			per[k]++
		}
	}
	return per, total
}

// everConnected counts the players that connected at least once.
func (r *recorder) everConnected() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i := range r.players {
		if len(r.players[i].connects) > 0 {
			n++
		}
	}
	return n
}

// event is a server killed or drained and the players it had.
type event struct {
	kind     string // "kill" or "drain"
	name     string
	server   netip.AddrPort
	at       time.Time
	affected []int
}

// outcome is how an event's players fared.
type outcome struct {
	// back holds, per player back on another server, the time from the
	// event to its connect there; sinceLoss the time from the player
	// noticing the loss to that connect.
	back, sinceLoss []time.Duration
	missing         int // players not back on another server
	clean           int // sessions ended by the server's disconnect packets
	timedOut        int // sessions that timed out
	otherEnd        int // denied, or no loss seen (a handshake that fell back)
	// stale counts the tokens issued more than the directory's cache
	// time after the event, to any player, that still listed the server.
	stale int
	// landed counts, per server, the event's players whose first connect
	// after the event was there: how the directory spread them.
	landed map[netip.AddrPort]int
}

// outcome reads the players' histories for ev. A token issued within
// cache of the event may still list its server.
func (r *recorder) outcome(ev *event, cache time.Duration) outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := outcome{landed: make(map[netip.AddrPort]int)}
	for i := range r.players {
		for _, t := range r.players[i].tokens {
			if t.at.After(ev.at.Add(cache)) && slices.Contains(t.servers, ev.server) {
				o.stale++
			}
		}
	}
	for _, i := range ev.affected {
		p := &r.players[i]
		k := slices.IndexFunc(p.connects, func(c connectRec) bool { return c.at.After(ev.at) && c.server != ev.server })
		if k < 0 {
			o.missing++
			continue
		}
		back := p.connects[k].at
		o.back = append(o.back, back.Sub(ev.at))
		o.landed[p.connects[k].server]++
		l := slices.IndexFunc(p.losses, func(l lossRec) bool { return l.at.After(ev.at) && l.server == ev.server })
		if l < 0 || p.losses[l].at.After(back) {
			o.otherEnd++
			continue
		}
		loss := p.losses[l]
		o.sinceLoss = append(o.sinceLoss, back.Sub(loss.at))
		switch {
		case loss.state == engine.Disconnected:
			o.clean++
		case loss.state == engine.ConnectionTimedOut:
			o.timedOut++
		default:
			o.otherEnd++
		}
	}
	return o
}

// backAll reports whether every player of ev is connected to another
// server now.
func (r *recorder) backAll(ev *event) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, i := range ev.affected {
		p := &r.players[i]
		if !p.connected || p.at == ev.server {
			return false
		}
	}
	return true
}

// playing counts the players connected now whose last echo came after
// since.
func (r *recorder) playing(since time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i := range r.players {
		p := &r.players[i]
		if p.connected && p.lastEcho.After(since) {
			n++
		}
	}
	return n
}

// pickRejoin marks a random player connected to one of servers, not
// already rejoining, to rejoin, and returns it (-1: none).
func (r *recorder) pickRejoin(servers []netip.AddrPort) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.players)
	for k, off := 0, rand.N(n); k < n; k++ {
		i := (off + k) % n
		p := &r.players[i]
		if p.connected && !p.rejoining && slices.Contains(servers, p.at) {
			p.rejoining = true
			r.rejoins++
			return i
		}
	}
	return -1
}

// rejoinsPending counts the players asked to rejoin that have not
// connected again.
func (r *recorder) rejoinsPending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i := range r.players {
		if r.players[i].rejoining {
			n++
		}
	}
	return n
}
