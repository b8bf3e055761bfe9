package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/netcode-go/netcode/cmd/internal/cli"
	"github.com/netcode-go/netcode/engine/backend"
	"github.com/netcode-go/netcode/engine/metrics"
	"github.com/netcode-go/netcode/engine/metrics/tokenservice"
)

// serveOptions are serve's flags.
type serveOptions struct {
	listen, protocol, keyFile  string
	lifetime, timeout          int64
	auth, secretsFile          string
	servers, healthServers     string
	agonesURL, agonesNamespace string
	agonesCert, agonesKey      string
	agonesCA, agonesPort       string
	agonesSelectors            selectorList
	rate                       float64
	burst                      int
	tlsCert, tlsKey            string
	logFormat, logLevel        string
	devDirect                  bool
	maxConns                   int
	wtServers, wtHashes        listFlag
	wtHashFile                 string
}

// selectorList is a repeatable -agones-selector flag: k=v[,k=v...].
type selectorList []map[string]string

func (l *selectorList) String() string { return fmt.Sprint(*l) }

func (l *selectorList) Set(s string) error {
	m := map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q: want label=value[,label=value...]", s)
		}
		m[k] = v
	}
	*l = append(*l, m)
	return nil
}

func serveFlags() (*cli.FlagSet, *serveOptions) {
	o := &serveOptions{}
	fs := newFlagSet("serve", "-protocol HEX -key-file F -auth dev|bearer [-secrets-file F] -servers A,B | -health-servers URL=ADDR,... | -agones-url URL [flags]")
	fs.HostPort(&o.listen, "listen", "127.0.0.1:8080", false, "`ADDR` to serve HTTP on; POST /token answers with a token, GET /healthz with 200, GET /readyz with 200 while a server can be offered, GET /metrics with the service's metrics")
	fs.Hex(&o.protocol, "protocol", "protocol id: 1 to 16 `HEX` digits (required)")
	fs.StringVar(&o.keyFile, "key-file", "", "`FILE` holding the private key as 64 hex digits (default: $"+keyEnv+")")
	fs.Int64(&o.lifetime, "lifetime", int64(defaultTokenLifetime/time.Second), 1, 86400, false, "token lifetime in `SECONDS`, 1 to 86400; must equal the servers' -token-lifetime")
	fs.Int64(&o.timeout, "timeout", backend.DefaultTimeoutSeconds, 1, 86400, true, "connection timeout in the tokens, 1 to 86400 `SECONDS`, or -1 for none (development only)")
	fs.Choice(&o.auth, "auth", "", []string{"dev", "bearer"}, "how callers are identified: dev (loopback callers only, client id from the client_id query parameter) or bearer (Authorization: Bearer SECRET, from -secrets-file)")
	fs.StringVar(&o.secretsFile, "secrets-file", "", "with -auth bearer: `FILE` of lines CLIENT_ID SECRET")
	fs.StringVar(&o.servers, "servers", "", "static servers: a `LIST` of PUBLIC[/INTERNAL],... in order of preference, such as 203.0.113.7:40000,203.0.113.8:40000")
	fs.StringVar(&o.healthServers, "health-servers", "", "servers chosen by health: a `LIST` of URL=PUBLIC[/INTERNAL],..., where URL/readyz and URL/metrics are the server's endpoints")
	fs.StringVar(&o.agonesURL, "agones-url", "", "Agones allocator service base `URL` (https://host:port): one game server allocated per token")
	fs.StringVar(&o.agonesNamespace, "agones-namespace", "default", "with -agones-url: the fleet's `NAMESPACE`")
	fs.StringVar(&o.agonesCert, "agones-cert", "", "with -agones-url: client certificate `FILE` (PEM) the allocator accepts")
	fs.StringVar(&o.agonesKey, "agones-key", "", "with -agones-url: the client certificate's key `FILE` (PEM)")
	fs.StringVar(&o.agonesCA, "agones-ca", "", "with -agones-url: CA `FILE` (PEM) of the allocator's certificate (default: the system's)")
	fs.StringVar(&o.agonesPort, "agones-port-name", backend.DefaultAgonesPortName, "with -agones-url: the `NAME` of the game server port clients dial")
	fs.Var(&o.agonesSelectors, "agones-selector", "with -agones-url: `LABELS` (label=value[,label=value]) of game servers to allocate; repeat to try several in order")
	fs.Var(&o.wtServers, "webtransport-server", "a server's WebTransport `ADDR` (PUBLIC[/INTERNAL]; repeat, or a comma list, in order of preference): requests with ?transport=webtransport get tokens naming these, for browsers")
	fs.Var(&o.wtHashes, "webtransport-cert-hash", "SHA-256 (64 `HEX` digits) of a WebTransport server's certificate, handed out as certificate_hashes for the page's serverCertificateHashes; repeat for several")
	fs.StringVar(&o.wtHashFile, "webtransport-cert-hash-file", "", "`FILE` of certificate hashes, one per line (netcode-server -webtransport-hash-file writes it), read again when it changes")
	fs.Float(&o.rate, "rate", backend.DefaultRatePerSecond, 0, 1e6, "tokens per second per client id, a `RATE` above 0 up to 1000000")
	fs.Int(&o.burst, "burst", backend.DefaultRateBurst, 1, 1<<20, fmt.Sprintf("`N` tokens a client id may get at once, 1 to %d", 1<<20))
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS with this certificate `FILE` (PEM); tokens hold the client's session keys in the clear, so serve plain HTTP only behind a TLS proxy or on loopback")
	fs.StringVar(&o.tlsKey, "tls-key", "", "the -tls-cert's key `FILE` (PEM)")
	fs.Choice(&o.logFormat, "log-format", "json", []string{"json", "text"}, "log format: json or text")
	fs.Choice(&o.logLevel, "log-level", "info", []string{"debug", "info", "warn", "error"}, "log level: debug, info, warn or error")
	fs.Bool(&o.devDirect, "dev-direct", false, "with -auth dev: no proxy relays to the listener, so ignore forwarding headers instead of refusing requests that carry one")
	fs.Int(&o.maxConns, "max-conns", backend.DefaultMaxConns, 1, 1<<20, fmt.Sprintf("`N` connections served at once, 1 to %d; more wait to be accepted", 1<<20))
	return fs, o
}

// registry is the service's metrics registry: the Go runtime's and the
// process's collectors, netcode_build_info and the handler's and its
// health directory's series.
func registry(b cli.BuildInfo, h *backend.Handler, dir backend.Directory) metrics.Registry {
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewBuildInfo(b.Version, b.Revision, b.GoVersion))
	health, _ := dir.(*backend.HealthDirectory)
	reg.MustRegister(tokenservice.NewCollector(h, health))
	return reg
}

// ready reports whether the service can offer a server: with a health
// directory, some server answered ready at the last probe (or none was
// probed yet); with the other directories, always.
func ready(dir backend.Directory) bool {
	health, ok := dir.(*backend.HealthDirectory)
	if !ok {
		return true
	}
	states := health.States(nil)
	for _, s := range states {
		if s.Up {
			return true
		}
	}
	return len(states) == 0
}

// newLogger makes the structured logger of -log-format and -log-level
// (both checked when parsed), as netcode-server's.
func newLogger(format, level string, w io.Writer) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// runServe runs the token service until e.ctx is done.
func runServe(e *env, args []string) error {
	fs, o := serveFlags()
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	logger := newLogger(o.logFormat, o.logLevel, e.stderr)
	cfg, err := serveConfig(e, o)
	if err != nil {
		return err
	}
	if cfg.WebTransport, err = webTransportConfig(o, logger); err != nil {
		return err
	}
	b := cli.Build()
	logger.Info("netcode-token serve starting", slog.String("version", b.Version), slog.String("revision", b.Revision), slog.String("go", b.GoVersion))
	cfg.Logger = logger
	h, err := backend.NewHandler(cfg)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/token", h)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready(cfg.Directory) {
			http.Error(w, "no server answered ready at the last probe", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.Handle("GET /metrics", metrics.Handler(registry(b, h, cfg.Directory), logger))
	raw, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	srv, ln, err := backend.NewHTTPServer(mux, raw, backend.HTTPLimits{MaxConns: o.maxConns},
		backend.DefaultDirectoryTimeout+10*time.Second, // the handler bounds its directory call
		slog.NewLogLogger(logger.Handler(), slog.LevelWarn))
	if err != nil {
		raw.Close()
		return err
	}
	if o.tlsCert == "" && !isLoopback(o.listen) {
		logger.Warn("serving plain HTTP on a non-loopback address: tokens (with the client's session keys) and bearer secrets travel in the clear unless a TLS proxy is in front")
	}
	logger.Info("listening", slog.String("addr", ln.Addr().String()), slog.Any("config", cfg))
	done := make(chan error, 1)
	go func() {
		if o.tlsCert != "" {
			done <- srv.ServeTLS(ln, o.tlsCert, o.tlsKey)
		} else {
			done <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-e.ctx.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(ctx)
	if serveErr := <-done; !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	logger.Info("stopped")
	return err
}

// serveConfig checks the flags and builds the handler's configuration.
func serveConfig(e *env, o *serveOptions) (backend.Config, error) {
	var cfg backend.Config
	var err error
	if cfg.ProtocolID, err = parseProtocol(o.protocol); err != nil {
		return cfg, err
	}
	cfg.TokenLifetime = time.Duration(o.lifetime) * time.Second
	cfg.TimeoutSeconds = int32(o.timeout)
	cfg.RateLimit = backend.RateLimit{PerSecond: o.rate, Burst: o.burst}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return cfg, usagef("-tls-cert and -tls-key go together")
	}
	if o.maxConns < 1 || o.maxConns > 1<<20 {
		return cfg, usagef("-max-conns %d: allowed 1 to %d", o.maxConns, 1<<20)
	}
	if o.devDirect && o.auth != "dev" {
		return cfg, usagef("-dev-direct goes with -auth dev")
	}
	switch o.auth {
	case "dev":
		if !isLoopback(o.listen) {
			return cfg, usagef("-auth dev serves loopback callers only: -listen %q must be a loopback address such as 127.0.0.1:8080", o.listen)
		}
		if o.secretsFile != "" {
			return cfg, usagef("-secrets-file goes with -auth bearer")
		}
		cfg.Authenticate = backend.LoopbackOnly
		if o.devDirect {
			cfg.Authenticate = backend.LoopbackOnlyDirect
		}
	case "bearer":
		if o.secretsFile == "" {
			return cfg, usagef("-auth bearer needs -secrets-file (lines of CLIENT_ID SECRET)")
		}
		secrets, err := backend.LoadBearerSecrets(o.secretsFile)
		if err != nil {
			return cfg, fmt.Errorf("-secrets-file: %w", err)
		}
		cfg.Authenticate = secrets.Authenticate
	default:
		return cfg, usagef("-auth is required: dev (loopback callers, for development) or bearer (-secrets-file)")
	}
	if cfg.Directory, err = directory(o); err != nil {
		return cfg, err
	}
	if cfg.PrivateKey, err = loadKey(e, o.keyFile, true); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// directory builds the one directory the flags name.
func directory(o *serveOptions) (backend.Directory, error) {
	n := 0
	for _, s := range []string{o.servers, o.healthServers, o.agonesURL} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return nil, usagef("give one of -servers, -health-servers and -agones-url (%d given)", n)
	}
	switch {
	case o.servers != "":
		var servers []backend.Server
		for i, s := range strings.Split(o.servers, ",") {
			srv, err := parseServer(s)
			if err != nil {
				return nil, usagef("-servers, server %d: %w", i+1, err)
			}
			servers = append(servers, srv)
		}
		if len(servers) > backend.MaxServers {
			return nil, usagef("-servers: %d servers; allowed 1 to %d", len(servers), backend.MaxServers)
		}
		d, err := backend.NewStaticDirectory(servers)
		if err != nil {
			return nil, cli.UsageError{Err: err}
		}
		return d, nil
	case o.healthServers != "":
		var targets []backend.HealthTarget
		for i, s := range strings.Split(o.healthServers, ",") {
			eq := strings.LastIndexByte(s, '=')
			if eq < 0 {
				return nil, usagef("-health-servers, entry %d: %q; want URL=PUBLIC[/INTERNAL]", i+1, s)
			}
			srv, err := parseServer(s[eq+1:])
			if err != nil {
				return nil, usagef("-health-servers, entry %d: %w", i+1, err)
			}
			targets = append(targets, backend.HealthTarget{URL: s[:eq], Server: srv})
		}
		d, err := backend.NewHealthDirectory(backend.HealthConfig{Targets: targets})
		if err != nil {
			return nil, cli.UsageError{Err: err}
		}
		return d, nil
	}
	tlsConfig, err := agonesTLS(o)
	if err != nil {
		return nil, err
	}
	d, err := backend.NewAgonesAllocatorDirectory(backend.AgonesConfig{
		URL: o.agonesURL, Namespace: o.agonesNamespace, Selectors: o.agonesSelectors,
		PortName: o.agonesPort, TLSConfig: tlsConfig,
	})
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	return d, nil
}

// parseServer reads PUBLIC[/INTERNAL].
func parseServer(s string) (backend.Server, error) {
	pub, in, hasInternal := strings.Cut(strings.TrimSpace(s), "/")
	var srv backend.Server
	var err error
	if srv.Public, err = parseAddr(pub); err != nil {
		return srv, err
	}
	if hasInternal {
		if srv.Internal, err = parseAddr(in); err != nil {
			return srv, fmt.Errorf("internal address %w", err)
		}
	}
	return srv, nil
}

func agonesTLS(o *serveOptions) (*tls.Config, error) {
	if (o.agonesCert == "") != (o.agonesKey == "") {
		return nil, usagef("-agones-cert and -agones-key go together")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.agonesCert != "" {
		cert, err := tls.LoadX509KeyPair(o.agonesCert, o.agonesKey)
		if err != nil {
			return nil, fmt.Errorf("-agones-cert: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if o.agonesCA != "" {
		pem, err := os.ReadFile(o.agonesCA)
		if err != nil {
			return nil, fmt.Errorf("-agones-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-agones-ca %s: no PEM certificate", o.agonesCA)
		}
	}
	return cfg, nil
}

// isLoopback reports whether a listen address is on loopback only.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
