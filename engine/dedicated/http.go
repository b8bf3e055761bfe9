package dedicated

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/health"
	"github.com/netcode-go/netcode/engine/metrics"
)

// Paths of the HTTP endpoints.
const (
	PathMetrics = "/metrics"
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
)

// web is the HTTP server of the operational endpoints.
type web struct {
	srv  *http.Server
	ln   net.Listener
	done chan error // Serve's result
}

// handler routes the operational endpoints.
func handler(srv *engine.Server, reg metrics.Registry, stall time.Duration, w *watchdog, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(PathMetrics, metrics.Handler(reg, log))
	mux.Handle(PathHealthz, health.LivenessAnd(srv, stall, w.live))
	mux.Handle(PathReadyz, health.Readiness(srv))
	return mux
}

// listenHTTP opens the listener, so that a taken port fails Run before it
// serves, and starts serving h.
func listenHTTP(addr string, h http.Handler, log *slog.Logger) (*web, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dedicated: HTTP listener: %w", err)
	}
	w := &web{ln: ln, done: make(chan error, 1), srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      metrics.ScrapeTimeout + 5*time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    8 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
	go func() {
		err := w.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		w.done <- err
	}()
	return w, nil
}

// addr is the listener's address, or nil for no server.
func (w *web) addr() net.Addr {
	if w == nil {
		return nil
	}
	return w.ln.Addr()
}

// failed is Serve's early end, or nil for no server (never ready).
func (w *web) failed() <-chan error {
	if w == nil {
		return nil
	}
	return w.done
}

// close shuts the server down gracefully within HTTPShutdownTimeout, then
// closes what is left, and waits for Serve to return.
func (w *web) close() error {
	if w == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), HTTPShutdownTimeout)
	defer cancel()
	if err := w.srv.Shutdown(ctx); err != nil {
		w.srv.Close()
	}
	return <-w.done
}
