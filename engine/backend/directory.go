package backend

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/codec"
)

// MaxServers is the most servers a connect token holds, and so the most
// candidates a Directory returns.
const MaxServers = codec.MaxServersPerConnect

// ErrNoServers is what a Directory returns when it has no server to offer;
// the handler answers 503 no_servers.
var ErrNoServers = errors.New("backend: no server available")

// Server is one candidate dedicated server.
type Server struct {
	// Public is the address the client dials.
	Public netip.AddrPort
	// Internal is the address the server knows itself by (behind NAT or a
	// load balancer); the zero value means the same as Public.
	Internal netip.AddrPort
}

// internal returns the address that goes into the private token.
func (s Server) internal() netip.AddrPort {
	if s.Internal.IsValid() {
		return s.Internal
	}
	return s.Public
}

// check reports whether both addresses can go into a token and be dialled.
func (s Server) check() error {
	if err := checkDialable(s.Public); err != nil {
		return fmt.Errorf("public address: %w", err)
	}
	if s.Internal.IsValid() {
		if err := checkDialable(s.Internal); err != nil {
			return fmt.Errorf("internal address: %w", err)
		}
	}
	return nil
}

// checkDialable accepts what the wire format carries, less the addresses
// no client can reach: port 0 and the unspecified address.
func checkDialable(a netip.AddrPort) error {
	if err := codec.CheckAddress(a); err != nil {
		return err
	}
	if a.Port() == 0 || a.Addr().IsUnspecified() {
		return fmt.Errorf("%v: want a specific IPv4 or IPv6 address and a port from 1 to 65535", a)
	}
	return nil
}

// A Directory picks the servers a connect token lists. The handler calls
// Servers once per request, from many goroutines at once.
type Directory interface {
	// Servers appends up to MaxServers candidates to dst, most preferred
	// first, and returns the extended slice. An empty result or
	// ErrNoServers means no server can take a player now.
	Servers(ctx context.Context, dst []Server) ([]Server, error)
}

// StaticDirectory always offers the same servers, in the same order.
type StaticDirectory struct {
	servers []Server
}

var _ Directory = (*StaticDirectory)(nil)

// NewStaticDirectory returns a directory of 1 to MaxServers servers with
// addresses a token can hold (IPv4 or IPv6 with a non-zero port).
func NewStaticDirectory(servers []Server) (*StaticDirectory, error) {
	if len(servers) < 1 || len(servers) > MaxServers {
		return nil, fmt.Errorf("backend: static directory: %d servers; allowed 1 to %d", len(servers), MaxServers)
	}
	for i, s := range servers {
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("backend: static directory: server %d: %w", i, err)
		}
	}
	return &StaticDirectory{servers: append([]Server(nil), servers...)}, nil
}

// newHTTPClient is a directory's default client: no proxy from the
// environment (the servers are the operator's own), no redirects.
func newHTTPClient(tlsConfig *tls.Config) *http.Client {
	return &http.Client{
		Transport:     &http.Transport{TLSClientConfig: tlsConfig, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute, ForceAttemptHTTP2: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Servers appends the configured servers to dst.
func (d *StaticDirectory) Servers(_ context.Context, dst []Server) ([]Server, error) {
	return append(dst, d.servers...), nil
}
