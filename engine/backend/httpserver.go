package backend

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// HTTP server defaults for a token service (for zero HTTPLimits fields).
const (
	// DefaultMaxConns bounds open connections: each idle keep-alive
	// connection costs tens of KiB, and a caller can open thousands.
	DefaultMaxConns = 1024
	// DefaultReadHeaderTimeout bounds reading a request's headers (slow
	// headers hold a connection).
	DefaultReadHeaderTimeout = 5 * time.Second
	// DefaultReadTimeout bounds reading a whole request.
	DefaultReadTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection idle this long.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultMaxHeaderBytes bounds a request's headers.
	DefaultMaxHeaderBytes = 16 << 10

	maxMaxConns    = 1 << 20
	maxHTTPTimeout = 10 * time.Minute
)

// HTTPLimits bound the HTTP server in front of a Handler. Zero fields take
// the defaults.
type HTTPLimits struct {
	// MaxConns is the most connections served at once (default 1024;
	// allowed 1 to 2^20). Further ones wait in the kernel's accept queue
	// until one closes.
	MaxConns int
	// ReadHeaderTimeout, ReadTimeout and IdleTimeout are http.Server's
	// (defaults 5 s, 10 s and 30 s; allowed up to 10 min).
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// MaxHeaderBytes is http.Server's (default 16 KiB; allowed 1 KiB to
	// 1 MiB).
	MaxHeaderBytes int
}

func (l HTTPLimits) withDefaults() (HTTPLimits, error) {
	if !orDefault(&l.MaxConns, DefaultMaxConns, 1, maxMaxConns) {
		return l, fmt.Errorf("backend: HTTPLimits.MaxConns %d; allowed 1 to %d (0 means %d)", l.MaxConns, maxMaxConns, DefaultMaxConns)
	}
	for _, t := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"ReadHeaderTimeout", &l.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{"ReadTimeout", &l.ReadTimeout, DefaultReadTimeout},
		{"IdleTimeout", &l.IdleTimeout, DefaultIdleTimeout},
	} {
		if !orDefault(t.v, t.def, time.Millisecond, maxHTTPTimeout) {
			return l, fmt.Errorf("backend: HTTPLimits.%s %v; allowed 1ms to %v (0 means %v)", t.name, *t.v, maxHTTPTimeout, t.def)
		}
	}
	if !orDefault(&l.MaxHeaderBytes, DefaultMaxHeaderBytes, 1<<10, 1<<20) {
		return l, fmt.Errorf("backend: HTTPLimits.MaxHeaderBytes %d; allowed %d to %d (0 means %d)", l.MaxHeaderBytes, 1<<10, 1<<20, DefaultMaxHeaderBytes)
	}
	return l, nil
}

// NewHTTPServer returns an http.Server for h with limits' timeouts, and ln
// wrapped to serve at most limits.MaxConns connections at once; serve the
// returned listener. writeTimeout bounds writing a response (a Handler's
// reply waits for its directory: DirectoryTimeout plus a margin).
func NewHTTPServer(h http.Handler, ln net.Listener, limits HTTPLimits, writeTimeout time.Duration, errLog *log.Logger) (*http.Server, net.Listener, error) {
	limits, err := limits.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: limits.ReadHeaderTimeout,
		ReadTimeout:       limits.ReadTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       limits.IdleTimeout,
		MaxHeaderBytes:    limits.MaxHeaderBytes,
		ErrorLog:          errLog,
	}
	return srv, netutil.LimitListener(ln, limits.MaxConns), nil
}
