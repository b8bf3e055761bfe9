package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/webtransport"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/backend"
	"github.com/netcode-go/netcode/reliable"
	"github.com/netcode-go/netcode/web"
)

// protocolID is the demo game's protocol id ("netcode" and 1).
const protocolID = 0x6e6574636f646501

// config is what the flags decide; tests set the rest.
type config struct {
	// HTTP serves the page, the client and /api/token.
	HTTP netip.AddrPort
	// UDP and WebTransport are the game server's addresses (UDP for
	// native players, WebTransport for browsers).
	UDP, WebTransport netip.AddrPort
	// Dist holds a built client (go run ./web/build); empty builds one
	// into a temporary directory at start.
	Dist   string
	Logger *slog.Logger
	// tokenClock is the token service's clock (nil: time.Now); the tests
	// mint expired tokens with it.
	tokenClock func() time.Time
}

// demo is the whole example: a netcode server with the echo game on UDP
// and WebTransport, the token service on a loopback port of its own, and
// the game's web backend, which serves the page and asks the token service
// for each player's token.
type demo struct {
	log     *slog.Logger
	srv     *engine.Server
	udp     batchio.Conn
	wt      *webtransport.Conn
	tokens  *http.Server
	page    *http.Server
	tokenLn net.Listener
	pageLn  net.Listener
	dist    string
	tmp     string // removed at Close

	nextID atomic.Uint64
	client *http.Client

	// The echo game's counts: connections, and departures by reason.
	connects atomic.Int64
	left     [8]atomic.Int64
	echoed   atomic.Int64

	stop chan struct{}
	wg   sync.WaitGroup
}

func start(ctx context.Context, cfg config) (d *demo, err error) {
	d = &demo{log: cfg.Logger, stop: make(chan struct{}), client: &http.Client{Timeout: 10 * time.Second}}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	d.dist = cfg.Dist
	if d.dist == "" {
		if d.tmp, err = os.MkdirTemp("", "netcode-webdemo-"); err != nil {
			return d, err
		}
		d.dist = d.tmp
		d.log.Info("building the browser client (go run ./web/build -o DIR and -dist DIR skip this)")
		if err = web.Build(ctx, d.dist); err != nil {
			return d, err
		}
	}
	if _, err = os.Stat(filepath.Join(d.dist, "netcode.wasm")); err != nil {
		return d, fmt.Errorf("-dist %s: no netcode.wasm (build it with go run ./web/build -o %s): %w", d.dist, d.dist, err)
	}

	// One key for the run, shared by the server and the token service:
	// the demo has no secret to configure.
	key := make([]byte, codec.KeyBytes)
	rand.Read(key)

	if d.udp, err = batchio.Listen(cfg.UDP, batchio.Config{}); err != nil {
		return d, fmt.Errorf("UDP %v: %w", cfg.UDP, err)
	}
	if d.wt, err = webtransport.Listen(webtransport.Config{Addr: cfg.WebTransport}); err != nil {
		return d, fmt.Errorf("WebTransport %v: %w", cfg.WebTransport, err)
	}
	rc := reliable.DefaultConfig()
	if d.srv, err = engine.NewServer(engine.ServerConfig{
		ProtocolID: protocolID,
		PrivateKey: key,
		MaxClients: 64,
		Reliable:   &rc,
		Logger:     d.log,
	}, d.udp, d.wt); err != nil {
		return d, err
	}
	d.wg.Go(d.echo)

	// The token service, on a loopback port only the backend calls. In
	// development it takes the client id from the backend's query
	// (LoopbackOnlyDirect); a real deployment authenticates the backend.
	// Native players get tokens for the UDP address, browsers
	// (transport=webtransport) for the WebTransport one, with the hash of
	// the certificate to pin.
	udpDir, err := backend.NewStaticDirectory([]backend.Server{{Public: d.udp.LocalAddr()}})
	if err != nil {
		return d, err
	}
	wtDir, err := backend.NewStaticDirectory([]backend.Server{{Public: d.wt.LocalAddr()}})
	if err != nil {
		return d, err
	}
	hash := d.wt.CertificateHash()
	h, err := backend.NewHandler(backend.Config{
		ProtocolID:   protocolID,
		PrivateKey:   key,
		Authenticate: backend.LoopbackOnlyDirect,
		Directory:    udpDir,
		WebTransport: &backend.WebTransportConfig{
			Directory:         wtDir,
			CertificateHashes: func() [][32]byte { return [][32]byte{hash} },
		},
		TimeoutSeconds: 5,
		Logger:         d.log,
		Now:            cfg.tokenClock,
	})
	if err != nil {
		return d, err
	}
	if d.tokenLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return d, err
	}
	d.tokens = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	d.wg.Go(func() { d.tokens.Serve(d.tokenLn) })

	if d.pageLn, err = net.Listen("tcp", cfg.HTTP.String()); err != nil {
		return d, fmt.Errorf("HTTP %v: %w", cfg.HTTP, err)
	}
	d.nextID.Store(uint64(time.Now().UnixNano()))
	d.page = &http.Server{Handler: d.routes(), ReadHeaderTimeout: 5 * time.Second}
	d.wg.Go(func() { d.page.Serve(d.pageLn) })
	return d, nil
}

// URL is the page's address.
func (d *demo) URL() string { return "http://" + d.pageLn.Addr().String() + "/" }

func (d *demo) routes() http.Handler {
	mux := http.NewServeMux()
	page, _ := web.Files.ReadFile("example/index.html")
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	files := http.FileServer(http.Dir(d.dist))
	for _, f := range []string{"/netcode.js", "/netcode.wasm", "/wasm_exec.js"} {
		mux.Handle("GET "+f, files)
	}
	mux.HandleFunc("POST /api/token", d.token)
	return mux
}

// token is the game's web backend: it names the player (here each
// request is a new player) and asks the token service for a token to the
// WebTransport address, which comes with the certificate's hash. The page
// never sees the token service or anything that authenticates to it.
func (d *demo) token(w http.ResponseWriter, r *http.Request) {
	id := d.nextID.Add(1)
	url := fmt.Sprintf("http://%s/?client_id=%d&transport=webtransport", d.tokenLn.Addr(), id)
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, url, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	res, err := d.client.Do(req)
	if err != nil {
		http.Error(w, "token service: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		http.Error(w, "token service: "+err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(res.StatusCode)
	w.Write(body)
}

// echo is the game: every payload goes back to its sender.
func (d *demo) echo() {
	for {
		select {
		case <-d.stop:
			return
		default:
		}
		d.srv.Wait(time.Now().Add(100 * time.Millisecond))
		d.srv.Poll(func(ev *engine.Event) {
			switch ev.Kind {
			case engine.EventConnect:
				d.connects.Add(1)
				d.log.Info("player connected", "client_id", ev.ClientID, "address", ev.Address)
			case engine.EventDisconnect:
				if int(ev.Reason) < len(d.left) {
					d.left[ev.Reason].Add(1)
				}
				d.log.Info("player left", "client_id", ev.ClientID, "reason", ev.Reason.String())
			case engine.EventPayload:
				if d.srv.SendPacket(ev.ClientIndex, ev.Payload) == nil {
					d.echoed.Add(1)
				}
			}
		})
	}
}

// Close stops everything the demo started.
func (d *demo) Close() error {
	var errs []error
	select {
	case <-d.stop:
		return nil
	default:
		close(d.stop)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range []*http.Server{d.page, d.tokens} {
		if s != nil {
			errs = append(errs, s.Shutdown(ctx))
		}
	}
	for _, ln := range []net.Listener{d.pageLn, d.tokenLn} {
		if ln != nil {
			ln.Close() // never served if start failed in between
		}
	}
	if d.srv != nil {
		errs = append(errs, d.srv.Close())
	}
	d.wg.Wait()
	if d.wt != nil {
		errs = append(errs, d.wt.Close())
	}
	if d.udp != nil {
		errs = append(errs, d.udp.Close())
	}
	if d.tmp != "" {
		os.RemoveAll(d.tmp)
	}
	return errors.Join(ignoreClosed(errs)...)
}

func ignoreClosed(errs []error) []error {
	var out []error
	for _, err := range errs {
		if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, batchio.ErrClosed) {
			out = append(out, err)
		}
	}
	return out
}
