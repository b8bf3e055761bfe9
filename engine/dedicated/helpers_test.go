package dedicated_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/dedicated"
)

const protocol = 0x646564696361

// logBuf collects a run's logs; they are printed if the test fails.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// running is a Run in progress.
type running struct {
	t      testing.TB
	key    []byte
	srv    *engine.Server
	url    string // http://host:port of the endpoints
	cancel context.CancelFunc
	done   chan error
	logs   *logBuf
	web    *http.Client
}

// start runs game with cfg, filled in for a test: a random key, two shards
// on 127.0.0.1 and the endpoints on a free port unless set. It returns
// once the server listens.
func start(t testing.TB, cfg dedicated.Config, game dedicated.Game) *running {
	t.Helper()
	r := &running{t: t, key: make([]byte, 32), done: make(chan error, 1), logs: new(logBuf),
		web: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	rand.Read(r.key)
	if cfg.Server.PrivateKey == nil {
		cfg.Server.ProtocolID, cfg.Server.PrivateKey = protocol, r.key
	} else {
		r.key = cfg.Server.PrivateKey
	}
	if cfg.Server.Shards == 0 {
		cfg.Server.Shards = 2
	}
	if cfg.Bind == nil {
		cfg.Bind = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	cfg.Logger = slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	serving := make(chan struct{})
	cfg.Serving = func(srv *engine.Server, addr net.Addr) {
		r.srv = srv
		if addr != nil {
			r.url = "http://" + addr.String()
		}
		close(serving)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- dedicated.Run(ctx, cfg, game) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(time.Minute):
			t.Error("Run did not return within a minute of the test's end")
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", r.logs)
		}
	})
	select {
	case <-serving:
	case err := <-r.done:
		r.done <- err
		t.Fatalf("Run returned before serving: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not serve within 10 s")
	}
	return r
}

// wait returns Run's result, failing the test if it takes longer than d.
func (r *running) wait(d time.Duration) error {
	r.t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(d):
		r.t.Fatalf("Run did not return within %v", d)
		return nil
	}
}

// get GETs one of the endpoints.
func (r *running) get(path string) (int, string) {
	r.t.Helper()
	resp, err := r.web.Get(r.url + path)
	if err != nil {
		r.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// token mints a token for client id.
func (r *running) token(id uint64) []byte {
	r.t.Helper()
	tok, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: protocol, PrivateKey: r.key, ClientID: id,
		PublicAddresses: r.srv.PublicAddresses(), ExpireSeconds: 30, TimeoutSeconds: 10})
	if err != nil {
		r.t.Fatal(err)
	}
	return tok
}

// players are test clients, driven by the test goroutine only.
type players struct {
	t       testing.TB
	clients []*engine.Client
	got     []int // payloads received, per client
	buf     []byte
}

func newPlayers(t testing.TB) *players { return &players{t: t, buf: make([]byte, 1200)} }

// dial starts a client connecting with tok.
func (p *players) dial(tok []byte) int {
	p.t.Helper()
	c, err := engine.DialClient(engine.ClientConfig{})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { c.Close() })
	if err := c.Connect(tok, time.Now()); err != nil {
		p.t.Fatal(err)
	}
	p.clients = append(p.clients, c)
	p.got = append(p.got, 0)
	return len(p.clients) - 1
}

// pump updates every client once and counts what they received.
func (p *players) pump() {
	now := time.Now()
	for i, c := range p.clients {
		c.Update(now)
		for {
			if _, _, ok := c.ReceivePacket(p.buf); !ok {
				break
			}
			p.got[i]++
		}
	}
}

// until pumps until cond holds, failing after d.
func (p *players) until(d time.Duration, what string, cond func() bool) {
	p.t.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		p.pump()
		time.Sleep(time.Millisecond)
	}
}

func (p *players) state(i int) engine.ClientState { return p.clients[i].State() }

// connected waits until clients from..to-1 are connected.
func (p *players) connected(from, to int) {
	p.t.Helper()
	p.until(5*time.Second, "clients connected", func() bool {
		for _, c := range p.clients[from:to] {
			if c.State() != engine.Connected {
				return false
			}
		}
		return true
	})
}

// noneLeft fails t unless, within 5 s, no goroutine runs (or was started
// by) the server, its shards, the runner or the Agones client.
func noneLeft(t *testing.T) {
	t.Helper()
	ours := []string{"netcode/engine.", "netcode/engine/dedicated.", "netcode/engine/agones.", "netcode/batchio.", "netcode/batchio/webtransport."}
	var left []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		left = left[:0]
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			for _, pkg := range ours {
				if strings.Contains(g, "github.com/netcode-go/"+pkg) && !strings.HasPrefix(g, "goroutine "+curID()+" ") {
					left = append(left, g)
					break
				}
			}
		}
		if len(left) == 0 {
			return
		}
	}
	t.Fatalf("%d goroutines of the server left after Run returned:\n%s", len(left), strings.Join(left, "\n\n"))
}

// curID is the calling goroutine's id.
func curID() string {
	buf := make([]byte, 64)
	f := strings.Fields(string(buf[:runtime.Stack(buf, false)]))
	return f[1]
}
