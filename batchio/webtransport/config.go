package webtransport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/netcode-go/netcode/codec"
)

// Defaults for the zero fields of Config.
const (
	DefaultPath                   = "/netcode"
	DefaultMaxSessions            = 1024
	DefaultSessionsPerSecond      = 200
	DefaultSessionBurst           = 64
	DefaultSessionsPerSecondPerIP = 4
	DefaultSessionBurstPerIP      = 8
	DefaultMaxTrackedIPs          = 4096
	DefaultMaxPendingSessions     = 256
	DefaultHandshakeTimeout       = 5 * time.Second
	DefaultIdleTimeout            = 10 * time.Second
	DefaultMaxDatagramSize        = codec.MaxPacketBytes
	DefaultInboxSize              = 4096
	DefaultSessionQueue           = 64
	DefaultSendQueue              = 64
	DefaultDatagramsPerSecond     = 1000
	DefaultDatagramBurst          = 200
	// DevCertificateValidity is how long Listen's development certificate
	// is valid: Chrome accepts certificates pinned by hash for at most 14
	// days.
	DevCertificateValidity = 10 * 24 * time.Hour
)

const (
	maxSessionsLimit  = 1 << 20
	maxRate           = 1e6
	maxBurst          = 1 << 20
	maxTrackedIPs     = 1 << 20
	maxTimeout        = time.Hour
	minTimeout        = 10 * time.Millisecond
	minDatagramSize   = 64
	maxInboxSize      = 1 << 20
	maxSendQueue      = 1 << 12
	maxAllowedOrigins = 1 << 10
)

// Config configures Listen. Zero fields take the defaults; a value out of
// range is an error that names the allowed range.
type Config struct {
	// Addr is the UDP address QUIC listens on, and the conn's LocalAddr:
	// the address a connect token names for browser players.
	Addr netip.AddrPort
	// Path is the URL path of the WebTransport endpoint (default
	// "/netcode"); other paths get 404.
	Path string
	// Certificate is the TLS certificate. Nil: a development certificate
	// for localhost and Addr's IP is generated (DevCertificate), valid
	// for DevCertificateValidity; browsers accept it only pinned by its
	// hash (CertificateHash).
	Certificate *tls.Certificate
	// AllowedOrigins are the web origins (scheme://host[:port]) whose
	// pages may open sessions, compared without regard to case. Empty:
	// any origin, and requests without one.
	AllowedOrigins []string

	// MaxSessions bounds the open sessions, and the QUIC connections
	// (default 1024; allowed 1 to 2^20).
	MaxSessions int
	// SessionsPerSecond and SessionBurst bound how fast new sessions are
	// accepted overall (defaults 200 and 64; allowed more than 0 to 1e6,
	// and 1 to 2^20).
	SessionsPerSecond float64
	SessionBurst      int
	// SessionsPerSecondPerIP and SessionBurstPerIP bound them per remote
	// IP address (defaults 4 and 8).
	SessionsPerSecondPerIP float64
	SessionBurstPerIP      int
	// MaxTrackedIPs bounds the table of per-IP buckets (default 4096;
	// allowed 1 to 2^20). A new IP finding it full of IPs that are still
	// limited is refused.
	MaxTrackedIPs int
	// MaxPendingSessions bounds the sessions the server has not sent a
	// datagram to yet: handshakes in progress, or sessions of clients
	// whose requests it ignores (default 256; allowed 1 to MaxSessions).
	MaxPendingSessions int
	// HandshakeTimeout closes a session the server has sent nothing to
	// for this long after it opened (default 5s; allowed 10ms to 1h).
	HandshakeTimeout time.Duration
	// IdleTimeout closes a session that has received no datagram from
	// the browser, or none from the server, for this long (default 10s;
	// allowed 10ms to 1h).
	IdleTimeout time.Duration

	// MaxDatagramSize is the largest datagram accepted from a browser
	// (default and most codec.MaxPacketBytes, netcode's largest packet;
	// least 64). Larger ones are dropped and counted.
	MaxDatagramSize int
	// InboxSize bounds the datagrams received and not yet read, all
	// sessions together (default 4096; allowed 64 to 2^20).
	InboxSize int
	// SessionQueue is one session's share of the inbox: a session with
	// this many datagrams waiting has its next ones dropped, so one
	// flooding session cannot fill the inbox (default 64; allowed 1 to
	// InboxSize).
	SessionQueue int
	// SendQueue bounds the datagrams waiting to be sent to one session
	// (default 64; allowed 1 to 4096). A session whose browser does not
	// keep up has the excess dropped.
	SendQueue int
	// DatagramsPerSecond and DatagramBurst bound the datagrams accepted
	// from one session (defaults 1000 and 200; allowed more than 0 to
	// 1e6, and 1 to 2^20).
	DatagramsPerSecond float64
	DatagramBurst      int
}

func (c Config) withDefaults() (Config, error) {
	if !c.Addr.IsValid() {
		return c, errors.New("webtransport: Config.Addr is required (the UDP address to listen on, ip:port)")
	}
	if c.Path == "" {
		c.Path = DefaultPath
	}
	if !strings.HasPrefix(c.Path, "/") {
		return c, fmt.Errorf("webtransport: Config.Path %q; want a URL path starting with /", c.Path)
	}
	if len(c.AllowedOrigins) > maxAllowedOrigins {
		return c, fmt.Errorf("webtransport: Config.AllowedOrigins has %d entries; allowed at most %d", len(c.AllowedOrigins), maxAllowedOrigins)
	}
	for i, o := range c.AllowedOrigins {
		if !strings.Contains(o, "://") {
			return c, fmt.Errorf("webtransport: Config.AllowedOrigins[%d] %q; want an origin, scheme://host[:port]", i, o)
		}
	}
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("webtransport: Config."+format, args...))
		}
	}
	check(intField(&c.MaxSessions, DefaultMaxSessions, 1, maxSessionsLimit),
		"MaxSessions %d; allowed 1 to %d (0 means %d)", c.MaxSessions, maxSessionsLimit, DefaultMaxSessions)
	check(rateField(&c.SessionsPerSecond, DefaultSessionsPerSecond),
		"SessionsPerSecond %g; allowed more than 0 up to %g (0 means %d)", c.SessionsPerSecond, maxRate, DefaultSessionsPerSecond)
	check(intField(&c.SessionBurst, DefaultSessionBurst, 1, maxBurst),
		"SessionBurst %d; allowed 1 to %d (0 means %d)", c.SessionBurst, maxBurst, DefaultSessionBurst)
	check(rateField(&c.SessionsPerSecondPerIP, DefaultSessionsPerSecondPerIP),
		"SessionsPerSecondPerIP %g; allowed more than 0 up to %g (0 means %d)", c.SessionsPerSecondPerIP, maxRate, DefaultSessionsPerSecondPerIP)
	check(intField(&c.SessionBurstPerIP, DefaultSessionBurstPerIP, 1, maxBurst),
		"SessionBurstPerIP %d; allowed 1 to %d (0 means %d)", c.SessionBurstPerIP, maxBurst, DefaultSessionBurstPerIP)
	check(intField(&c.MaxTrackedIPs, DefaultMaxTrackedIPs, 1, maxTrackedIPs),
		"MaxTrackedIPs %d; allowed 1 to %d (0 means %d)", c.MaxTrackedIPs, maxTrackedIPs, DefaultMaxTrackedIPs)
	check(intField(&c.MaxPendingSessions, min(DefaultMaxPendingSessions, c.MaxSessions), 1, c.MaxSessions),
		"MaxPendingSessions %d; allowed 1 to MaxSessions (%d)", c.MaxPendingSessions, c.MaxSessions)
	check(durField(&c.HandshakeTimeout, DefaultHandshakeTimeout),
		"HandshakeTimeout %v; allowed %v to %v (0 means %v)", c.HandshakeTimeout, minTimeout, maxTimeout, DefaultHandshakeTimeout)
	check(durField(&c.IdleTimeout, DefaultIdleTimeout),
		"IdleTimeout %v; allowed %v to %v (0 means %v)", c.IdleTimeout, minTimeout, maxTimeout, DefaultIdleTimeout)
	check(intField(&c.MaxDatagramSize, DefaultMaxDatagramSize, minDatagramSize, codec.MaxPacketBytes),
		"MaxDatagramSize %d; allowed %d to %d (0 means %d)", c.MaxDatagramSize, minDatagramSize, codec.MaxPacketBytes, DefaultMaxDatagramSize)
	check(intField(&c.InboxSize, DefaultInboxSize, 64, maxInboxSize),
		"InboxSize %d; allowed 64 to %d (0 means %d)", c.InboxSize, maxInboxSize, DefaultInboxSize)
	check(intField(&c.SessionQueue, min(DefaultSessionQueue, c.InboxSize), 1, c.InboxSize),
		"SessionQueue %d; allowed 1 to InboxSize (%d)", c.SessionQueue, c.InboxSize)
	check(intField(&c.SendQueue, DefaultSendQueue, 1, maxSendQueue),
		"SendQueue %d; allowed 1 to %d (0 means %d)", c.SendQueue, maxSendQueue, DefaultSendQueue)
	check(rateField(&c.DatagramsPerSecond, DefaultDatagramsPerSecond),
		"DatagramsPerSecond %g; allowed more than 0 up to %g (0 means %d)", c.DatagramsPerSecond, maxRate, DefaultDatagramsPerSecond)
	check(intField(&c.DatagramBurst, DefaultDatagramBurst, 1, maxBurst),
		"DatagramBurst %d; allowed 1 to %d (0 means %d)", c.DatagramBurst, maxBurst, DefaultDatagramBurst)
	return c, errors.Join(errs...)
}

// intField sets a zero *v to def and reports whether *v is in [lo, hi].
func intField(v *int, def, lo, hi int) bool {
	if *v == 0 {
		*v = def
	}
	return *v >= lo && *v <= hi
}

func rateField(v *float64, def float64) bool {
	if *v == 0 {
		*v = def
	}
	return *v > 0 && *v <= maxRate // false for NaN
}

func durField(v *time.Duration, def time.Duration) bool {
	if *v == 0 {
		*v = def
	}
	return *v >= minTimeout && *v <= maxTimeout
}
