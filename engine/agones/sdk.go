package agones

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// EnvHTTPPort is the variable Agones sets in game server containers to the
// port of the sidecar's REST gateway ("Connecting to the SDK Server",
// agones site/content/en/docs/Guides/Client SDKs/_index.md).
const EnvHTTPPort = "AGONES_SDK_HTTP_PORT"

// DefaultHTTPPort is the gateway's port when EnvHTTPPort is unset
// (agones cmd/sdk-server/main.go defaultHTTPPort).
const DefaultHTTPPort = 9358

// SDK defaults and bounds.
const (
	DefaultRequestTimeout = 2 * time.Second
	maxRequestTimeout     = time.Minute
	// maxResponseBytes bounds what is read of a response: a GameServer with
	// the most Kubernetes allows in annotations (256 KiB) and a full List
	// fits well within it.
	maxResponseBytes = 1 << 20
	// maxErrorExcerpt bounds the response body quoted in an Error.
	maxErrorExcerpt = 256
)

// Config configures an SDK. The zero value talks to the local sidecar.
type Config struct {
	// Address is the gateway's host:port. Empty means "localhost:" and
	// $AGONES_SDK_HTTP_PORT, or localhost:9358 when that is unset.
	Address string
	// Client sends the requests. Nil means a client of its own with no
	// proxy (the sidecar is in the pod), closed by SDK.Close.
	Client *http.Client
	// RequestTimeout bounds each attempt of each call (0 means 2s).
	RequestTimeout time.Duration
	// Retry is the retry policy of each call.
	Retry Backoff
}

// SDK is a client of the Agones SDK sidecar's REST gateway. Its methods are
// safe for concurrent use. Each call makes up to Retry.MaxAttempts
// attempts, each bounded by RequestTimeout and all by the caller's context.
// A call is retried when the connection was refused (the sidecar may start
// after the game server), and, when repeating it is harmless, also after a
// timeout, a broken connection or an HTTP 429/502/503/504.
type SDK struct {
	base    string // "http://host:port"
	client  *http.Client
	own     *http.Transport // nil unless the SDK made its client
	timeout time.Duration
	retry   Backoff
	stats   *sdkStats
}

type sdkStats struct {
	calls, attempts, failures atomic.Uint64
	mu                        sync.Mutex
	lastErr                   error
	lastErrAt                 time.Time
}

// SDKStats counts an SDK's calls.
type SDKStats struct {
	Calls    uint64 // method calls
	Attempts uint64 // HTTP requests sent or tried, retries included
	Failures uint64 // calls that returned an error
	// LastError is the newest failure's message and LastErrorAt its time.
	LastError   string
	LastErrorAt time.Time
}

// NewSDK returns an SDK for cfg. It does not contact the sidecar.
func NewSDK(cfg Config) (*SDK, error) {
	addr := cfg.Address
	if addr == "" {
		port := strconv.Itoa(DefaultHTTPPort)
		if v, ok := os.LookupEnv(EnvHTTPPort); ok && v != "" {
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("agones: $%s is %q; want a port from 1 to 65535", EnvHTTPPort, v)
			}
			port = v
		}
		addr = net.JoinHostPort("localhost", port)
	}
	addr = strings.TrimPrefix(addr, "http://")
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || strings.ContainsAny(addr, "/?#@") {
		return nil, fmt.Errorf("agones: Config.Address %q; want host:port (e.g. localhost:%d)", cfg.Address, DefaultHTTPPort)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return nil, fmt.Errorf("agones: Config.Address %q; the port must be 1 to 65535", cfg.Address)
	}
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	if timeout < time.Millisecond || timeout > maxRequestTimeout {
		return nil, fmt.Errorf("agones: Config.RequestTimeout %v; allowed 1ms to %v (0 means %v)", timeout, maxRequestTimeout, DefaultRequestTimeout)
	}
	retry, err := cfg.Retry.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &SDK{
		base:    "http://" + net.JoinHostPort(host, port),
		client:  cfg.Client,
		timeout: timeout,
		retry:   retry,
		stats:   new(sdkStats),
	}
	if s.client == nil {
		t := &http.Transport{}
		if d, ok := http.DefaultTransport.(*http.Transport); ok {
			t = d.Clone() // its dial and idle timeouts
		}
		t.Proxy = nil
		t.MaxIdleConnsPerHost = 4
		s.own = t
		s.client = &http.Client{Transport: t}
	}
	return s, nil
}

// Close closes the idle connections of the client the SDK made (a Client
// from Config is left alone). The SDK stays usable.
func (s *SDK) Close() error {
	if s.own != nil {
		s.own.CloseIdleConnections()
	}
	return nil
}

// Stats returns the SDK's counters.
func (s *SDK) Stats() SDKStats {
	st := SDKStats{
		Calls:    s.stats.calls.Load(),
		Attempts: s.stats.attempts.Load(),
		Failures: s.stats.failures.Load(),
	}
	s.stats.mu.Lock()
	if s.stats.lastErr != nil {
		st.LastError = s.stats.lastErr.Error()
		st.LastErrorAt = s.stats.lastErrAt
	}
	s.stats.mu.Unlock()
	return st
}

// withAttempts returns a copy of s that makes at most n attempts per call
// and shares its client and counters.
func (s *SDK) withAttempts(n int) *SDK {
	c := *s
	c.retry.MaxAttempts = n
	return &c
}

// Error is a failed sidecar call.
type Error struct {
	Call   string // the SDK method, with its argument when it names one
	Method string // HTTP method
	Path   string // request path
	// StatusCode is the HTTP status, or 0 when no response was read.
	StatusCode int
	// Body is the start of the response body (at most 256 bytes).
	Body string
	// Attempts is how many requests were tried.
	Attempts int
	// Err is the transport, context or decoding error; nil for an HTTP
	// error status.
	Err error
}

// Error says which call failed, how, and after how many attempts.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "agones: %s (%s %s)", e.Call, e.Method, e.Path)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
		if e.Body != "" {
			fmt.Fprintf(&b, " %q", e.Body)
		}
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

// Unwrap returns Err, so that errors.Is finds context.DeadlineExceeded
// and the like.
func (e *Error) Unwrap() error { return e.Err }

// call is one gateway operation.
type call struct {
	name   string
	method string
	path   string
	in     any // request body; nil sends none
	out    any // decoded response; nil discards it
	// idempotent calls may repeat after a timeout or gateway error, when
	// the first request may have been applied.
	idempotent bool
}

func (s *SDK) do(ctx context.Context, c call) error {
	s.stats.calls.Add(1)
	var body []byte
	if c.in != nil {
		var err error
		if body, err = json.Marshal(c.in); err != nil {
			return s.failed(&Error{Call: c.name, Method: c.method, Path: c.path, Err: err})
		}
	}
	for n := 1; ; n++ {
		e, retry := s.attempt(ctx, &c, body)
		if e == nil {
			return nil
		}
		e.Attempts = n
		if !retry || n >= s.retry.MaxAttempts || ctx.Err() != nil || !sleep(ctx, s.retry.delay(n), nil) {
			return s.failed(e)
		}
	}
}

func (s *SDK) failed(e *Error) error {
	s.stats.failures.Add(1)
	s.stats.mu.Lock()
	s.stats.lastErr, s.stats.lastErrAt = e, time.Now()
	s.stats.mu.Unlock()
	return e
}

// attempt sends one request; it reports whether a failure may be retried.
func (s *SDK) attempt(ctx context.Context, c *call, body []byte) (*Error, bool) {
	s.stats.attempts.Add(1)
	e := &Error{Call: c.name, Method: c.method, Path: c.path}
	actx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, c.method, s.base+c.path, rd)
	if err != nil {
		e.Err = err
		return e, false
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		e.Err = err
		if ctx.Err() != nil {
			e.Err = ctx.Err() // the caller gave up; say so plainly
			return e, false
		}
		return e, refused(err) || c.idempotent
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	e.StatusCode = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		e.Body = excerpt(data, maxErrorExcerpt)
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return e, c.idempotent
		}
		return e, false
	}
	switch {
	case err != nil:
		e.Err = fmt.Errorf("reading the response: %w", err)
		return e, c.idempotent && ctx.Err() == nil
	case len(data) > maxResponseBytes:
		e.Err = fmt.Errorf("response body over %d bytes", maxResponseBytes)
		return e, false
	}
	if c.out == nil {
		return nil, false
	}
	var derr error
	if gs, ok := c.out.(**GameServer); ok {
		*gs, derr = decodeGameServer(data)
	} else {
		derr = json.Unmarshal(data, c.out)
	}
	if derr != nil {
		e.Body = excerpt(data, maxErrorExcerpt)
		e.Err = fmt.Errorf("decoding the response: %w", derr)
		return e, false
	}
	return nil, false
}

// refused reports whether err means the request never reached a server,
// so that sending it again cannot apply it twice.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
