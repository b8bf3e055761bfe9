package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

// session is one connection a client made: when and to which server it
// connected and, if it ended, when and in which state.
type session struct {
	server    netip.AddrPort
	connected time.Time
	ended     time.Time // zero while it lasts
	endState  engine.ClientState
}

// issued is one token the service handed out.
type issued struct {
	at      time.Time
	servers []string
}

// player is one client's record, written by its goroutine and read after
// it returned.
type player struct {
	id       uint64
	sessions []session
	tokens   []issued
	refused  map[int]int // HTTP status -> count of refusals
	failed   map[engine.ClientState]int
	echoes   int
	crowd    *crowd
}

// tokenReply is the part of the service's JSON the client reads.
type tokenReply struct {
	ConnectToken string   `json:"connect_token"`
	Servers      []string `json:"servers"`
}

// play runs one client until ctx ends: it gets a token over HTTP, connects,
// sends payloads at rateHz and counts the echoes, and when its session ends
// (a dead server times out, a drained one disconnects it) gets a fresh
// token and connects again.
func play(ctx context.Context, p *player, url string, rateHz float64, httpc *http.Client) error {
	conn, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{RecvBuffer: 256 << 10, SendBuffer: 256 << 10})
	if err != nil {
		return err
	}
	c, err := engine.NewClient(engine.ClientConfig{}, conn)
	if err != nil {
		conn.Close()
		return err
	}
	defer c.Close() // sends the redundant disconnects if connected; closes conn
	period := time.Duration(float64(time.Second) / rateHz)
	payload := make([]byte, 64)
	buf := make([]byte, codec.MaxPayloadBytes)
	for ctx.Err() == nil {
		token, retry, err := p.fetch(ctx, url, httpc)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(retry):
			}
			continue
		}
		now := time.Now()
		if err := c.Connect(token, now); err != nil {
			return fmt.Errorf("client %d: connect: %w", p.id, err)
		}
		var cur *session
		next := now
		for ctx.Err() == nil {
			now = time.Now()
			c.Update(now)
			st := c.State()
			if cur == nil && st == engine.Connected {
				p.sessions = append(p.sessions, session{server: c.ServerAddress(), connected: now})
				cur = &p.sessions[len(p.sessions)-1]
				p.crowd.joined(cur.server)
				next = now
			}
			if cur != nil && st != engine.Connected {
				cur.ended, cur.endState = now, st
				p.crowd.left(cur.server)
				break
			}
			if cur == nil && !st.IsConnecting() {
				p.failed[st]++ // every server in the token failed
				break
			}
			if cur != nil && !now.Before(next) {
				c.SendPacket(payload)
				c.Flush()
				next = next.Add(period)
				if next.Before(now) {
					next = now.Add(period)
				}
			}
			for {
				if _, _, ok := c.ReceivePacket(buf); !ok {
					break
				}
				p.echoes++
			}
			wake := now.Add(20 * time.Millisecond)
			if cur != nil && next.Before(wake) {
				wake = next
			}
			c.Wait(wake)
		}
	}
	return nil
}

// fetch asks the token service for a token. On a refusal it returns how
// long to wait before asking again.
func (p *player) fetch(ctx context.Context, url string, httpc *http.Client) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"?client_id="+strconv.FormatUint(p.id, 10), nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := httpc.Do(req)
	if err != nil {
		p.refused[0]++ // no answer
		return nil, 250 * time.Millisecond, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil || resp.StatusCode != http.StatusOK {
		p.refused[resp.StatusCode]++
		retry := 250 * time.Millisecond
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			retry = time.Duration(s) * time.Second
		}
		return nil, retry, fmt.Errorf("token service: %s", resp.Status)
	}
	var r tokenReply
	if err := json.Unmarshal(body, &r); err != nil {
		p.refused[resp.StatusCode]++
		return nil, time.Second, fmt.Errorf("token service: %w", err)
	}
	token, err := base64.StdEncoding.DecodeString(r.ConnectToken)
	if err != nil {
		p.refused[resp.StatusCode]++
		return nil, time.Second, fmt.Errorf("token service: connect_token: %w", err)
	}
	p.tokens = append(p.tokens, issued{at: time.Now(), servers: r.Servers})
	return token, 0, nil
}

// crowd runs the players on goroutines of their own until ctx ends and
// keeps, for the orchestrator, how many are in a session on each server.
type crowd struct {
	players []*player
	wg      sync.WaitGroup
	mu      sync.Mutex
	on      map[netip.AddrPort]int
	errs    []error
}

// startCrowd starts n players, spread evenly over ramp so that the token
// service's directory, which refreshes its view of the servers every
// second, spreads them over the servers.
func startCrowd(ctx context.Context, n int, url string, rateHz float64, ramp time.Duration) *crowd {
	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	cr := &crowd{on: map[netip.AddrPort]int{}}
	for i := range n {
		p := &player{id: uint64(i + 1), refused: map[int]int{}, failed: map[engine.ClientState]int{}, crowd: cr}
		cr.players = append(cr.players, p)
	}
	cr.wg.Go(func() {
		for i, p := range cr.players {
			if i > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(ramp / time.Duration(n)):
				}
			}
			cr.wg.Go(func() {
				if err := play(ctx, p, url, rateHz, httpc); err != nil {
					cr.mu.Lock()
					cr.errs = append(cr.errs, err)
					cr.mu.Unlock()
				}
			})
		}
	})
	return cr
}

// joined and left move a player in or out of a server's count.
func (cr *crowd) joined(server netip.AddrPort) {
	cr.mu.Lock()
	cr.on[server]++
	cr.mu.Unlock()
}

func (cr *crowd) left(server netip.AddrPort) {
	cr.mu.Lock()
	cr.on[server]--
	cr.mu.Unlock()
}

// online returns how many players are in a session on each server.
func (cr *crowd) online() map[netip.AddrPort]int {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	m := make(map[netip.AddrPort]int, len(cr.on))
	for k, v := range cr.on {
		if v > 0 {
			m[k] = v
		}
	}
	return m
}

// wait returns once every player has returned, with their errors.
func (cr *crowd) wait() []error {
	cr.wg.Wait()
	return cr.errs
}
