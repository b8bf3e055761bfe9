package health

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/netcode-go/netcode/engine"
)

// DefaultStall is the liveness bound the dedicated server uses: an idle
// shard passes every 10 ms and a busy one after every batch, so a shard
// silent for two seconds is stuck, not slow.
const DefaultStall = 2 * time.Second

// LiveChecker is what Liveness asks: *engine.Server.
type LiveChecker interface {
	// Live reports whether every shard passed within stall.
	Live(stall time.Duration) bool
}

// ReadyChecker is what Readiness asks: *engine.Server.
type ReadyChecker interface {
	// Ready reports whether the server runs and admits clients.
	Ready() bool
	// Draining reports whether the server stopped admitting.
	Draining() bool
}

// LoadReporter is what Readiness adds to its answer when the server has
// it: *engine.Server.
type LoadReporter interface {
	NumConnectedClients() int
	MaxClients() int
}

var (
	_ LiveChecker  = (*engine.Server)(nil)
	_ ReadyChecker = (*engine.Server)(nil)
	_ LoadReporter = (*engine.Server)(nil)
)

// Names of the load lines of Readiness's body.
const (
	LoadConnected = "connected_clients"
	LoadMax       = "max_clients"
)

// Response bodies; tests and scripts match them.
const (
	BodyLive        = "ok\n"
	BodyStalled     = "shard stalled\n"
	BodyHung        = "game hung\n"
	BodyReady       = "ready\n"
	BodyDraining    = "not ready: draining\n"
	BodyNotRunning  = "not ready: stopped\n"
	maxStall        = time.Hour
	allowedMethods  = "GET, HEAD"
	contentTypeText = "text/plain; charset=utf-8"
)

// Liveness returns a handler that answers 200 "ok" while srv is live
// within stall (every shard made progress within it) and 503 "shard
// stalled" otherwise, a stopped server included. A stall outside 1 ms to
// 1 h is replaced by DefaultStall.
func Liveness(srv LiveChecker, stall time.Duration) http.Handler {
	if stall < time.Millisecond || stall > maxStall {
		stall = DefaultStall
	}
	return handler(func() (int, string) {
		if srv.Live(stall) {
			return http.StatusOK, BodyLive
		}
		return http.StatusServiceUnavailable, BodyStalled
	})
}

// LivenessAnd is Liveness with the application's own check as well: it
// answers 503 "game hung" while live reports false (the dedicated runner
// passes its watchdog over the game's calls).
func LivenessAnd(srv LiveChecker, stall time.Duration, live func() bool) http.Handler {
	if stall < time.Millisecond || stall > maxStall {
		stall = DefaultStall
	}
	return handler(func() (int, string) {
		switch {
		case !live():
			return http.StatusServiceUnavailable, BodyHung
		case !srv.Live(stall):
			return http.StatusServiceUnavailable, BodyStalled
		}
		return http.StatusOK, BodyLive
	})
}

// Readiness returns a handler that answers 200 "ready" while srv listens
// and admits clients, and 503 "not ready: draining" once Drain (or
// Shutdown) was called, "not ready: stopped" when it is stopped or closed.
//
// When srv is also a LoadReporter, the status line is followed by its load,
// one "name value" line each, so that a directory learns readiness and
// free slots from one cheap request that a /metrics flood cannot starve:
//
//	ready
//	connected_clients 3
//	max_clients 64
func Readiness(srv ReadyChecker) http.Handler {
	load, _ := srv.(LoadReporter)
	return handler(func() (int, string) {
		code, body := http.StatusServiceUnavailable, BodyNotRunning
		switch {
		case srv.Ready():
			code, body = http.StatusOK, BodyReady
		case srv.Draining():
			body = BodyDraining
		}
		if load != nil {
			body += LoadConnected + " " + strconv.Itoa(load.NumConnectedClients()) + "\n" +
				LoadMax + " " + strconv.Itoa(load.MaxClients()) + "\n"
		}
		return code, body
	})
}

// handler serves probe's answer to GET and HEAD.
type handler func() (status int, body string)

func (probe handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", allowedMethods)
		http.Error(w, "method not allowed; use GET or HEAD", http.StatusMethodNotAllowed)
		return
	}
	status, body := probe()
	h.Set("Content-Type", contentTypeText)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, body)
	}
}
