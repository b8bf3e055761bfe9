package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/backend"
)

// Player bounds.
const (
	// maxTokenBody bounds a token service answer (a token response is
	// about 3 KiB).
	maxTokenBody = 64 << 10
	// maxRetryWait bounds how long a refused player waits before asking
	// again, whatever Retry-After says.
	maxRetryWait = 5 * time.Second
	payloadBytes = 32
)

// player is one game client: it gets a connect token from the token
// service with its bearer secret, connects, plays (a payload every
// period, echoed by the server) and, whenever its session ends, gets a
// fresh token and connects again, until ctx is done.
type player struct {
	index  int
	id     identity
	url    string
	http   *http.Client
	rec    *recorder
	period time.Duration
	conn   batchio.Conn
	client *engine.Client
	// rejoin asks the player to leave and join again with a fresh token.
	rejoin chan struct{}
}

func newPlayer(index int, id identity, url string, hc *http.Client, rec *recorder, rate float64) (*player, error) {
	conn, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{RecvBuffer: 64 << 10, SendBuffer: 64 << 10})
	if err != nil {
		return nil, fmt.Errorf("player %d socket: %w", index, err)
	}
	c, err := engine.NewClient(engine.ClientConfig{ReceiveQueueSize: 64}, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &player{index: index, id: id, url: url, http: hc, rec: rec,
		period: time.Duration(float64(time.Second) / rate), conn: conn, client: c, rejoin: make(chan struct{}, 1)}, nil
}

// run plays until ctx is done, then leaves with disconnect packets and
// closes the socket.
func (p *player) run(ctx context.Context) {
	defer p.conn.Close()
	defer p.client.Close()
	failures := 0
	for ctx.Err() == nil {
		tr, token, wait := p.fetch(ctx)
		if token == nil {
			failures++
			sleep(ctx, retryWait(wait, failures))
			continue
		}
		failures = 0
		if err := p.client.Connect(token, time.Now()); err != nil {
			p.rec.refusal(0)
			sleep(ctx, retryWait(0, 1))
			continue
		}
		first, _ := netip.ParseAddrPort(tr.Servers[0])
		p.play(ctx, first)
	}
}

// fetch asks the token service for a token. On a refusal it returns nil
// and how long the service asked it to wait (0: not said).
func (p *player) fetch(ctx context.Context) (*backend.TokenResponse, []byte, time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr, status, wait, err := requestToken(ctx, p.http, p.url, p.id.secret)
	if err != nil {
		p.rec.refusal(status)
		return nil, nil, wait
	}
	token, err := engine.DecodeToken(tr.ConnectToken)
	servers := make([]netip.AddrPort, 0, len(tr.Servers))
	for _, s := range tr.Servers {
		if a, aerr := netip.ParseAddrPort(s); aerr == nil {
			servers = append(servers, a)
		}
	}
	if err != nil || len(servers) == 0 || len(servers) != len(tr.Servers) {
		p.rec.refusal(0)
		return nil, nil, 0
	}
	p.rec.token(p.index, servers, tr.ClientID == strconv.FormatUint(p.id.id, 10))
	return tr, token, 0
}

// requestToken POSTs to the token service with a bearer secret and
// decodes its answer: what a game client does before it connects. status
// is the HTTP status (0: no answer); wait is the Retry-After of a 429.
func requestToken(ctx context.Context, hc *http.Client, url, secret string) (tr *backend.TokenResponse, status int, wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, 0, err
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxTokenBody)
	if resp.StatusCode != http.StatusOK {
		var e backend.ErrorResponse
		_ = json.NewDecoder(body).Decode(&e)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		return nil, resp.StatusCode, wait, fmt.Errorf("token service: %d %s: %s", resp.StatusCode, e.Error.Code, e.Error.Message)
	}
	tr = new(backend.TokenResponse)
	if err := json.NewDecoder(body).Decode(tr); err != nil {
		return nil, resp.StatusCode, 0, fmt.Errorf("token service: %w", err)
	}
	if len(tr.Servers) == 0 {
		return nil, resp.StatusCode, 0, errors.New("token service: a token with no servers")
	}
	return tr, resp.StatusCode, 0, nil
}

// retryWait is the wait before asking again: what the service said, or a
// jittered backoff from 250 ms doubling to 2 s, never over maxRetryWait.
func retryWait(said time.Duration, failures int) time.Duration {
	if said > 0 {
		return min(said, maxRetryWait)
	}
	d := min(250*time.Millisecond<<min(failures-1, 3), 2*time.Second)
	return d/2 + rand.N(d/2+1)
}

// play runs one session from Connect until it ends or ctx is done.
func (p *player) play(ctx context.Context, first netip.AddrPort) {
	c := p.client
	var (
		payload   [payloadBytes]byte
		buf       [1200]byte
		connected bool
		sent      uint64
		received  uint64
		lastEcho  time.Time
		nextSend  time.Time
		server    = c.ServerAddress()
	)
	binary.LittleEndian.PutUint64(payload[:], p.id.id)
	select {
	case <-p.rejoin: // asked during the last session, which ended first
	default:
	}
	p.rec.attempt(p.index, server)
	defer func() { p.rec.traffic(p.index, sent, received, lastEcho) }()
	for {
		now := time.Now()
		select {
		case <-ctx.Done():
			c.Disconnect(now)
			p.rec.left(p.index)
			return
		case <-p.rejoin:
			c.Disconnect(now)
			p.rec.left(p.index)
			return
		default:
		}
		c.Update(now)
		st := c.State()
		if a := c.ServerAddress(); st.IsConnecting() && a != server {
			server = a // the token's next server: the last one failed
			p.rec.attempt(p.index, server)
		}
		switch {
		case st == engine.Connected && !connected:
			connected, nextSend = true, now
			p.rec.connect(p.index, server, first)
		case st <= engine.Disconnected:
			p.rec.lost(p.index, server, st)
			return
		}
		for {
			n, _, ok := c.ReceivePacket(buf[:])
			if !ok {
				break
			}
			if n == payloadBytes {
				received++
				lastEcho = now
			}
		}
		if connected && !now.Before(nextSend) {
			binary.LittleEndian.PutUint64(payload[8:], sent)
			if c.SendPacket(payload[:]) == nil {
				sent++
			}
			nextSend = nextSend.Add(p.period)
			if nextSend.Before(now) {
				nextSend = now.Add(p.period)
			}
			c.Flush()
			p.rec.traffic(p.index, sent, received, lastEcho)
		}
		deadline := now.Add(100 * time.Millisecond)
		if connected && nextSend.Before(deadline) {
			deadline = nextSend
		}
		_ = c.Wait(deadline)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
