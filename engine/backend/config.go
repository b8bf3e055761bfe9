package backend

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

// Defaults and bounds of Config.
const (
	// defaultTokenLifetime is the servers' default MaxConnectTokenLifetime
	// (the restart rule's lifetime), which tokens' lifetime must equal.
	defaultTokenLifetime = engine.DefaultMaxConnectTokenLifetime
	// maxTokenLifetime is the largest lifetime a server accepts as its
	// MaxConnectTokenLifetime.
	maxTokenLifetime = engine.MaxConnectTokenLifetimeLimit

	// DefaultTimeoutSeconds is the tokens' connection timeout when
	// Config.TimeoutSeconds is 0.
	DefaultTimeoutSeconds = 10
	// DefaultMaxBodyBytes bounds request bodies when Config.MaxBodyBytes
	// is 0.
	DefaultMaxBodyBytes = 8 << 10
	// DefaultDirectoryTimeout bounds a Directory call when
	// Config.DirectoryTimeout is 0.
	DefaultDirectoryTimeout = 5 * time.Second

	maxTimeoutSeconds   = 86400
	maxMaxBodyBytes     = 1 << 20
	maxDirectoryTimeout = time.Minute
)

// Config configures a Handler.
type Config struct {
	// ProtocolID identifies the game; servers refuse tokens for another.
	ProtocolID uint64
	// PrivateKey is the 32-byte key shared with the dedicated servers.
	// The handler keeps a copy; it never logs or prints it.
	PrivateKey []byte
	// Authenticate identifies the caller (required); see AuthFunc.
	Authenticate AuthFunc
	// Directory offers the servers a token lists (required).
	Directory Directory
	// TokenLifetime is expire minus create of every token (default 30 s;
	// allowed whole seconds from 1 s to 24 h). It must equal the servers'
	// MaxConnectTokenLifetime, the restart rule's lifetime: a server
	// refuses tokens that expire before its start time plus that
	// lifetime, so a shorter TokenLifetime makes a freshly started server
	// refuse new tokens for the difference, and a longer one lets tokens
	// minted before a server restarted (which its fresh token history has
	// never seen) be used again on it, weakening the rule.
	TokenLifetime time.Duration
	// TimeoutSeconds is the connection timeout in each token (default 10;
	// allowed 1 to 86400, or -1 for no timeout, development only).
	TimeoutSeconds int32
	// WebTransport, if not nil, serves browsers: a request with the query
	// parameter transport=webtransport gets a token naming the servers'
	// WebTransport addresses, from its own Directory.
	WebTransport *WebTransportConfig
	// RateLimit limits tokens per client id.
	RateLimit RateLimit
	// AuthFailures limits refused authentications per caller address and
	// how often they are logged.
	AuthFailures AuthFailureLimit
	// MaxBodyBytes bounds a request body (default 8 KiB; allowed 1 to
	// 1 MiB). Larger bodies get 413.
	MaxBodyBytes int64
	// DirectoryTimeout bounds one Directory.Servers call (default 5 s;
	// allowed up to 1 min).
	DirectoryTimeout time.Duration
	// Logger receives one record per request (nil: no logging). Records
	// hold the client id, the outcome and the servers, never the key or
	// the token.
	Logger *slog.Logger
	// Now is the clock (nil: time.Now); tests set it.
	Now func() time.Time
}

// Transports a request names with the query parameter transport.
const (
	TransportUDP          = "udp" // the default
	TransportWebTransport = "webtransport"
)

// WebTransportConfig configures the tokens for browsers (WebTransport).
type WebTransportConfig struct {
	// Directory offers the servers' WebTransport addresses (required):
	// what the browser dials, and what the server's PublicAddresses hold.
	Directory Directory
	// CertificateHashes, if not nil, returns the SHA-256 hashes of the
	// servers' certificates, which the response carries
	// (certificate_hashes) for the page's serverCertificateHashes: for
	// self-signed certificates. It is called once per request, from many
	// goroutines, and should return at once (cache what it reads).
	CertificateHashes func() [][32]byte
}

// withDefaults fills zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if len(c.PrivateKey) != codec.KeyBytes {
		return c, fmt.Errorf("backend: PrivateKey of %d bytes; want %d", len(c.PrivateKey), codec.KeyBytes)
	}
	if c.Authenticate == nil {
		return c, fmt.Errorf("backend: Authenticate is nil; want a hook such as LoopbackOnly or (*BearerSecrets).Authenticate")
	}
	if c.Directory == nil {
		return c, fmt.Errorf("backend: Directory is nil; want one such as NewStaticDirectory's")
	}
	if c.WebTransport != nil {
		if c.WebTransport.Directory == nil {
			return c, fmt.Errorf("backend: WebTransport.Directory is nil; want the directory of the servers' WebTransport addresses")
		}
		wt := *c.WebTransport
		c.WebTransport = &wt
	}
	if c.TokenLifetime == 0 {
		c.TokenLifetime = defaultTokenLifetime
	}
	if l := c.TokenLifetime; l < time.Second || l > maxTokenLifetime || l%time.Second != 0 {
		return c, fmt.Errorf("backend: TokenLifetime %v; allowed whole seconds from 1s to %v (0 means %v), equal to the servers' MaxConnectTokenLifetime", l, maxTokenLifetime, defaultTokenLifetime)
	}
	if c.TimeoutSeconds == 0 {
		c.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if t := c.TimeoutSeconds; t != -1 && (t < 1 || t > maxTimeoutSeconds) {
		return c, fmt.Errorf("backend: TimeoutSeconds %d; allowed 1 to %d, or -1 for none (0 means %d)", t, maxTimeoutSeconds, DefaultTimeoutSeconds)
	}
	var err error
	if c.RateLimit, err = c.RateLimit.withDefaults(); err != nil {
		return c, fmt.Errorf("backend: %w", err)
	}
	if c.AuthFailures, err = c.AuthFailures.withDefaults(); err != nil {
		return c, fmt.Errorf("backend: %w", err)
	}
	if !orDefault(&c.MaxBodyBytes, DefaultMaxBodyBytes, 1, maxMaxBodyBytes) {
		return c, fmt.Errorf("backend: MaxBodyBytes %d; allowed 1 to %d (0 means %d)", c.MaxBodyBytes, maxMaxBodyBytes, DefaultMaxBodyBytes)
	}
	if !orDefault(&c.DirectoryTimeout, DefaultDirectoryTimeout, 0, maxDirectoryTimeout) {
		return c, fmt.Errorf("backend: DirectoryTimeout %v; allowed up to %v (0 means %v)", c.DirectoryTimeout, maxDirectoryTimeout, DefaultDirectoryTimeout)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// orDefault sets *v to def when it is zero and reports whether it is then
// within [lo, hi].
func orDefault[T cmp.Ordered](v *T, def, lo, hi T) bool {
	var zero T
	if *v == zero {
		*v = def
	}
	return *v >= lo && *v <= hi
}

// LogValue leaves the private key out of structured logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("protocol_id", engine.IDString(c.ProtocolID)),
		slog.String("private_key", "[redacted]"),
		slog.String("token_lifetime", c.TokenLifetime.String()),
		slog.Int("timeout_seconds", int(c.TimeoutSeconds)),
		slog.Float64("rate_per_second", c.RateLimit.PerSecond),
		slog.Int("rate_burst", c.RateLimit.Burst),
	)
}

// Format leaves the private key out of fmt's output (%v, %+v, %#v, %x...).
func (c Config) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "backend.Config{ProtocolID:%#x PrivateKey:[redacted] TokenLifetime:%v TimeoutSeconds:%d RateLimit:%+v MaxBodyBytes:%d DirectoryTimeout:%v}",
		c.ProtocolID, c.TokenLifetime, c.TimeoutSeconds, c.RateLimit, c.MaxBodyBytes, c.DirectoryTimeout)
}
