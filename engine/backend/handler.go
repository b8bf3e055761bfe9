package backend

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

// Handler is the token service: POST a connect request, get a connect
// token. It is safe for concurrent use.
type Handler struct {
	cfg Config
	// key is behind a pointer so that printing a Handler shows an address,
	// not the key.
	key      *[codec.KeyBytes]byte
	limiter  *limiter
	failures *failures
	counters handlerCounters
}

var _ http.Handler = (*Handler)(nil)

// NewHandler checks cfg and returns a Handler. Config's doc gives every
// default and bound.
func NewHandler(cfg Config) (*Handler, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	key := new([codec.KeyBytes]byte)
	copy(key[:], cfg.PrivateKey)
	cfg.PrivateKey = nil // the copy above is the only one the handler keeps
	return &Handler{cfg: cfg, key: key, limiter: newLimiter(cfg.RateLimit), failures: newFailures(cfg.AuthFailures)}, nil
}

// TokenResponse is the JSON body of a successful request.
type TokenResponse struct {
	// ConnectToken is the 2048-byte token in standard base64 (padded).
	ConnectToken string `json:"connect_token"`
	// ClientID is the token's client id as a decimal string (a uint64
	// does not survive JSON numbers in every language).
	ClientID string `json:"client_id"`
	// CreatedAt and ExpiresAt are the token's timestamps in RFC 3339.
	CreatedAt string `json:"created_at"`
	ExpiresAt string `json:"expires_at"`
	// ExpireSeconds is ExpiresAt - CreatedAt: the token lifetime.
	ExpireSeconds int64 `json:"expire_seconds"`
	// TimeoutSeconds is the connection timeout in the token (-1: none).
	TimeoutSeconds int32 `json:"timeout_seconds"`
	// Servers are the token's public addresses, most preferred first.
	Servers []string `json:"servers"`
	// Transport is "webtransport" for a token for browsers (absent for
	// UDP).
	Transport string `json:"transport,omitempty"`
	// CertificateHashes are the SHA-256 hashes, 64 hex digits each, of
	// the WebTransport servers' certificates, for the page's
	// serverCertificateHashes (absent when none are configured).
	CertificateHashes []string `json:"certificate_hashes,omitempty"`
}

// ErrorResponse is the JSON body of every failed request.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is a machine-readable code and a message for people.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ServeHTTP answers a POST with a connect token for the authenticated
// caller, or an ErrorResponse.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := h.cfg.Logger.With(slog.String("remote", r.RemoteAddr))
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.fail(w, log, http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
		return
	}
	if r.ContentLength > h.cfg.MaxBodyBytes {
		h.tooLarge(w, log)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes)
	dir, webTransport, msg := h.transport(r)
	if msg != "" {
		h.fail(w, log, http.StatusBadRequest, "bad_request", msg)
		return
	}

	// An address that keeps failing to authenticate is answered without
	// trying: guessing secrets costs it AuthFailures' refill time each.
	caller := failureKey(r.RemoteAddr)
	if blocked, wait := h.failures.blocked(caller, h.cfg.Now()); blocked {
		secs := max(1, int64(math.Ceil(wait.Seconds())))
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		h.failLogged(w, log, caller, false, http.StatusTooManyRequests, "too_many_failures",
			fmt.Sprintf("too many failed authentications from this address; retry after %d s", secs))
		return
	}
	id, userData, err := h.cfg.Authenticate(r)
	if err != nil {
		h.refuse(w, log, caller, err)
		return
	}
	log = log.With(slog.String("client_id", engine.IDString(id)))
	if len(userData) > codec.UserDataBytes {
		log.Error("Authenticate returned too much user data", slog.Int("bytes", len(userData)), slog.Int("allowed", codec.UserDataBytes))
		h.fail(w, log, http.StatusInternalServerError, "internal", "internal error")
		return
	}

	now := h.cfg.Now()
	if ok, wait := h.limiter.allow(id, now); !ok {
		secs := max(1, int64(math.Ceil(wait.Seconds())))
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		h.fail(w, log, http.StatusTooManyRequests, "rate_limited", fmt.Sprintf("too many connect tokens for this client; retry after %d s", secs))
		return
	}

	servers, err := h.servers(r.Context(), log, dir)
	if err != nil {
		h.fail(w, log, http.StatusServiceUnavailable, "no_servers", "no server can take a player now; retry later")
		return
	}
	public := make([]netip.AddrPort, len(servers))
	internal := make([]netip.AddrPort, len(servers))
	names := make([]string, len(servers))
	for i, s := range servers {
		public[i], internal[i], names[i] = s.Public, s.internal(), s.Public.String()
	}
	lifetime := int64(h.cfg.TokenLifetime / time.Second)
	token, err := engine.GenerateConnectToken(engine.TokenParams{
		ProtocolID:        h.cfg.ProtocolID,
		PrivateKey:        h.key[:],
		ClientID:          id,
		PublicAddresses:   public,
		InternalAddresses: internal,
		ExpireSeconds:     lifetime,
		TimeoutSeconds:    h.cfg.TimeoutSeconds,
		UserData:          userData,
		Now:               now,
	})
	if err != nil {
		log.Error("minting a connect token failed", slog.String("error", err.Error()))
		h.fail(w, log, http.StatusInternalServerError, "internal", "internal error")
		return
	}
	created := time.Unix(now.Unix(), 0).UTC()
	var transport string
	var hashes []string
	if webTransport {
		transport = TransportWebTransport
		if f := h.cfg.WebTransport.CertificateHashes; f != nil {
			for _, hh := range f() {
				hashes = append(hashes, hex.EncodeToString(hh[:]))
			}
		}
	}
	h.write(w, http.StatusOK, TokenResponse{
		ConnectToken:      engine.EncodeToken(token),
		ClientID:          strconv.FormatUint(id, 10),
		CreatedAt:         created.Format(time.RFC3339),
		ExpiresAt:         created.Add(h.cfg.TokenLifetime).Format(time.RFC3339),
		ExpireSeconds:     lifetime,
		TimeoutSeconds:    h.cfg.TimeoutSeconds,
		Servers:           names,
		Transport:         transport,
		CertificateHashes: hashes,
	})
	h.counters.issued.Add(1)
	log.Info("connect token issued", slog.Any("servers", names), slog.String("transport", cmp.Or(transport, TransportUDP)))
}

// transport reads the query parameter transport: the directory to ask,
// whether it is WebTransport's, or why the request is refused.
func (h *Handler) transport(r *http.Request) (dir Directory, webTransport bool, refusal string) {
	values := r.URL.Query()["transport"]
	if len(values) > 1 {
		return nil, false, "transport given more than once"
	}
	t := ""
	if len(values) == 1 {
		t = values[0]
	}
	switch t {
	case "", TransportUDP:
		return h.cfg.Directory, false, ""
	case TransportWebTransport:
		if h.cfg.WebTransport == nil {
			return nil, false, "transport webtransport is not served here"
		}
		return h.cfg.WebTransport.Directory, true, ""
	}
	return nil, false, "transport: want udp or webtransport"
}

// servers asks the directory and keeps the first MaxServers usable
// candidates.
func (h *Handler) servers(ctx context.Context, log *slog.Logger, dir Directory) ([]Server, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.DirectoryTimeout)
	defer cancel()
	var buf [MaxServers]Server
	got, err := dir.Servers(ctx, buf[:0])
	if err != nil {
		log.Warn("directory failed", slog.String("error", err.Error()))
		return nil, err
	}
	out := got[:0]
	for _, s := range got {
		if err := s.check(); err != nil {
			log.Warn("directory offered an unusable server", slog.String("error", err.Error()))
			continue
		}
		if len(out) == MaxServers {
			break
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		log.Warn("directory offered no server")
		return nil, ErrNoServers
	}
	return out, nil
}

// refuse answers an Authenticate error, counting it against caller.
func (h *Handler) refuse(w http.ResponseWriter, log *slog.Logger, caller netip.Prefix, err error) {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		h.tooLarge(w, log)
		return
	}
	log = log.With(slog.String("error", err.Error()))
	ae, ok := errors.AsType[*AuthError](err)
	if !ok {
		h.failLogged(w, log, caller, true, http.StatusUnauthorized, "unauthorized", "authentication failed")
		return
	}
	status, code := http.StatusUnauthorized, "unauthorized"
	switch ae.Status {
	case http.StatusBadRequest:
		status, code = ae.Status, "bad_request"
	case http.StatusForbidden:
		status, code = ae.Status, "forbidden"
	case http.StatusServiceUnavailable:
		status, code = ae.Status, "unavailable"
	}
	if status == http.StatusUnauthorized && ae.Challenge != "" {
		w.Header().Set("WWW-Authenticate", ae.Challenge)
	}
	h.failLogged(w, log, caller, status != http.StatusServiceUnavailable, status, code, ae.Message)
}

// failLogged answers a refused or blocked caller like fail, spending one
// of its refusals if spend, and logs at most one line per
// AuthFailures.LogInterval for it, with the count of those not logged.
func (h *Handler) failLogged(w http.ResponseWriter, log *slog.Logger, caller netip.Prefix, spend bool, status int, code, message string) {
	if ok, unlogged := h.failures.refuse(caller, h.cfg.Now(), spend); ok {
		h.logRefused(log.With(slog.Int("unlogged_since_last", unlogged)), status, code)
	}
	h.counters.refuse(code)
	h.write(w, status, ErrorResponse{Error: ErrorBody{Code: code, Message: message}})
}

func (h *Handler) tooLarge(w http.ResponseWriter, log *slog.Logger) {
	h.fail(w, log, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("request body over %d bytes", h.cfg.MaxBodyBytes))
}

func (h *Handler) fail(w http.ResponseWriter, log *slog.Logger, status int, code, message string) {
	h.logRefused(log, status, code)
	h.counters.refuse(code)
	h.write(w, status, ErrorResponse{Error: ErrorBody{Code: code, Message: message}})
}

func (h *Handler) logRefused(log *slog.Logger, status int, code string) {
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelWarn
	}
	log.Log(context.Background(), level, "request refused", slog.Int("status", status), slog.String("code", code))
}

func (h *Handler) write(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body) // a write error means the caller went away
}
