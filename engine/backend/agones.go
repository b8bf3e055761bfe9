package backend

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// AgonesAllocatorDirectory defaults (for zero AgonesConfig fields) and
// bounds.
const (
	// DefaultAgonesTimeout bounds one allocation.
	DefaultAgonesTimeout = 5 * time.Second
	// DefaultAgonesPortName is the game server port clients dial, the
	// name Agones gives a GameServer's only port unless told otherwise.
	DefaultAgonesPortName = "default"

	maxAgonesTimeout   = time.Minute
	maxAgonesResponse  = 64 << 10
	maxAgonesSelectors = 16
)

// AgonesConfig configures an AgonesAllocatorDirectory.
type AgonesConfig struct {
	// URL is the allocator service's base URL, such as
	// https://203.0.113.1:443; the directory POSTs to
	// URL/gameserverallocation.
	URL string
	// Namespace is the Kubernetes namespace of the fleet (required).
	Namespace string
	// Selectors are label sets the allocator tries in order (its
	// gameServerSelectors; at most 16). None: any Ready game server.
	Selectors []map[string]string
	// PortName is the game server port clients dial (default "default").
	PortName string
	// Client makes the requests. The real allocator authenticates callers
	// by TLS client certificate: give a Client whose transport holds it, or
	// TLSConfig. Nil: a client built from TLSConfig.
	Client *http.Client
	// TLSConfig is used when Client is nil: the client certificate
	// (Certificates) and the allocator's CA (RootCAs).
	TLSConfig *tls.Config
	// Timeout bounds one allocation (default 5 s; allowed up to 1 min).
	Timeout time.Duration
}

// AgonesAllocatorDirectory allocates one game server per request from an
// Agones allocator service, through its REST API (POST
// /gameserverallocation with an AllocationRequest; the AllocationResponse
// gives the address and ports). Every call allocates a game server (it
// moves from Ready to Allocated), so the handler's per-client rate limit is
// also a limit on allocations. A response with no usable address or port
// leaves that game server allocated; the error names it.
//
// The token lists the game server's address: the response's address when
// it is an IP address, or else its first ExternalIP in addresses. Host
// names are not resolved.
type AgonesAllocatorDirectory struct {
	cfg      AgonesConfig
	endpoint string
	request  []byte
}

var _ Directory = (*AgonesAllocatorDirectory)(nil)

// agonesRequest is the part of the allocator's AllocationRequest this
// directory sends.
type agonesRequest struct {
	Namespace           string           `json:"namespace"`
	GameServerSelectors []agonesSelector `json:"gameServerSelectors,omitempty"`
}

type agonesSelector struct {
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// agonesResponse is the part of the allocator's AllocationResponse this
// directory reads.
type agonesResponse struct {
	GameServerName string `json:"gameServerName"`
	Ports          []struct {
		Name string `json:"name"`
		Port int32  `json:"port"`
	} `json:"ports"`
	Address   string `json:"address"`
	Addresses []struct {
		Type    string `json:"type"`
		Address string `json:"address"`
	} `json:"addresses"`
}

// agonesError is the gRPC gateway's error body.
type agonesError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// NewAgonesAllocatorDirectory checks cfg and returns a directory.
func NewAgonesAllocatorDirectory(cfg AgonesConfig) (*AgonesAllocatorDirectory, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("backend: agones: URL %q; want https://host[:port] (http:// only for an allocator with TLS turned off)", cfg.URL)
	}
	if cfg.Namespace == "" {
		return nil, errors.New("backend: agones: Namespace is empty; want the fleet's Kubernetes namespace")
	}
	if len(cfg.Selectors) > maxAgonesSelectors {
		return nil, fmt.Errorf("backend: agones: %d selectors; allowed 0 to %d", len(cfg.Selectors), maxAgonesSelectors)
	}
	if cfg.PortName == "" {
		cfg.PortName = DefaultAgonesPortName
	}
	if !orDefault(&cfg.Timeout, DefaultAgonesTimeout, 0, maxAgonesTimeout) {
		return nil, fmt.Errorf("backend: agones: Timeout %v; allowed up to %v (0 means %v)", cfg.Timeout, maxAgonesTimeout, DefaultAgonesTimeout)
	}
	if cfg.Client == nil {
		cfg.Client = newHTTPClient(cfg.TLSConfig)
	}
	req := agonesRequest{Namespace: cfg.Namespace}
	for _, s := range cfg.Selectors {
		req.GameServerSelectors = append(req.GameServerSelectors, agonesSelector{MatchLabels: s})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("backend: agones: %w", err)
	}
	return &AgonesAllocatorDirectory{cfg: cfg, endpoint: strings.TrimSuffix(u.String(), "/") + "/gameserverallocation", request: body}, nil
}

// Servers allocates a game server and appends it to dst. When the
// allocator has no game server to give (it answers 429 by default) the
// error wraps ErrNoServers.
func (d *AgonesAllocatorDirectory) Servers(ctx context.Context, dst []Server) ([]Server, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.endpoint, bytes.NewReader(d.request))
	if err != nil {
		return dst, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		return dst, fmt.Errorf("agones: %w", err)
	}
	defer drain(resp.Body)
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAgonesResponse+1))
	if err != nil {
		return dst, fmt.Errorf("agones: reading the response: %w", err)
	}
	if len(body) > maxAgonesResponse {
		return dst, fmt.Errorf("agones: response over %d bytes", maxAgonesResponse)
	}
	if resp.StatusCode != http.StatusOK {
		return dst, agonesStatusError(resp.StatusCode, body)
	}
	s, err := parseAgonesResponse(body, d.cfg.PortName)
	if err != nil {
		return dst, err
	}
	return append(dst, s), nil
}

// agonesStatusError describes a refused allocation.
func agonesStatusError(status int, body []byte) error {
	var e agonesError
	msg := "no error message"
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		msg = printable(e.Message, 200)
	}
	if status == http.StatusTooManyRequests {
		return fmt.Errorf("%w: agones: no game server to allocate (status 429): %s", ErrNoServers, msg)
	}
	return fmt.Errorf("agones: allocation refused with status %d: %s", status, msg)
}

// parseAgonesResponse picks the server's address and the port named
// portName from an AllocationResponse.
func parseAgonesResponse(body []byte, portName string) (Server, error) {
	var r agonesResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return Server{}, fmt.Errorf("agones: allocation response: %w", err)
	}
	name := printable(r.GameServerName, 100)
	var port int32
	found := false
	for _, p := range r.Ports {
		if p.Name == portName {
			port, found = p.Port, true
			break
		}
	}
	if !found {
		return Server{}, fmt.Errorf("agones: game server %q (now allocated) has no port named %q among %d ports", name, printable(portName, 100), len(r.Ports))
	}
	if port < 1 || port > 65535 {
		return Server{}, fmt.Errorf("agones: game server %q (now allocated): port %q is %d; want 1 to 65535", name, printable(portName, 100), port)
	}
	addr, err := netip.ParseAddr(r.Address)
	if err != nil {
		for _, a := range r.Addresses {
			if a.Type == "ExternalIP" {
				if addr, err = netip.ParseAddr(a.Address); err == nil {
					break
				}
			}
		}
	}
	if err != nil {
		return Server{}, fmt.Errorf("agones: game server %q (now allocated): address %q is not an IP address and it has no ExternalIP", name, printable(r.Address, 100))
	}
	s := Server{Public: netip.AddrPortFrom(addr.Unmap(), uint16(port))}
	if err := s.check(); err != nil {
		return Server{}, fmt.Errorf("agones: game server %q (now allocated): %w", name, err)
	}
	return s, nil
}

// printable bounds a string from the network for a log line.
func printable(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "..."
	}
	return strings.ToValidUTF8(strings.Map(func(r rune) rune {
		if r < ' ' || r == utf8.RuneError || r == 0x7f {
			return '?'
		}
		return r
	}, s), "?")
}
