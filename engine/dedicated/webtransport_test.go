package dedicated_test

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/webtransport"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/dedicated"
)

// TestWebTransportBesideUDP: one dedicated server serves a UDP player and
// a browser (a WebTransport client) at once; the browser's listener is in
// the metrics, and the drain disconnects both.
func TestWebTransportBesideUDP(t *testing.T) {
	var wt *webtransport.Conn
	r := start(t, dedicated.Config{
		WebTransport:          &webtransport.Config{Addr: netip.MustParseAddrPort("127.0.0.1:0")},
		WebTransportListening: func(c *webtransport.Conn) error { wt = c; return nil },
		DrainGrace:            200 * time.Millisecond,
	}, dedicated.Echo())
	if wt == nil {
		t.Fatal("WebTransportListening not called")
	}
	pub := r.srv.PublicAddresses()
	if !containsAddr(pub, wt.LocalAddr()) {
		t.Fatalf("public addresses %v lack the WebTransport listener's %v", pub, wt.LocalAddr())
	}
	if !strings.Contains(r.logs.String(), "certificate_sha256=") {
		t.Fatal("the certificate hash is not logged")
	}

	p := newPlayers(t)
	udp := p.dial(r.token(1))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cc, err := webtransport.Dial(ctx, wt.URL("127.0.0.1"), wt.CertificateHash())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	web, err := engine.NewClient(engine.ClientConfig{}, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	tok, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: protocol, PrivateKey: r.key, ClientID: 2,
		PublicAddresses: []netip.AddrPort{wt.LocalAddr()}, ExpireSeconds: 30, TimeoutSeconds: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := web.Connect(tok, time.Now()); err != nil {
		t.Fatal(err)
	}
	p.clients = append(p.clients, web)
	p.got = append(p.got, 0)
	p.connected(0, 2)

	payload := []byte("from the browser")
	if err := web.SendPacket(payload); err != nil {
		t.Fatal(err)
	}
	web.Flush()
	buf := make([]byte, 1200)
	echoed := false
	for deadline := time.Now().Add(5 * time.Second); !echoed && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		web.Update(time.Now())
		if n, _, ok := web.ReceivePacket(buf); ok {
			if !bytes.Equal(buf[:n], payload) {
				t.Fatalf("echo %q; want %q", buf[:n], payload)
			}
			echoed = true
		}
	}
	if !echoed {
		t.Fatal("no echo over WebTransport")
	}

	_, m := r.get(dedicated.PathMetrics)
	for _, want := range []string{`netcode_webtransport_sessions{state="open"} 1`, `netcode_webtransport_sessions_accepted_total 1`,
		`netcode_connected_clients{shard="2"} 1`} {
		if !strings.Contains(m, want) {
			t.Fatalf("metrics lack %q:\n%s", want, m)
		}
	}

	r.cancel() // drain: after the grace, the server disconnects both
	p.until(10*time.Second, "both players disconnected by the drain", func() bool {
		return p.state(udp) != engine.Connected && web.State() != engine.Connected
	})
	if err := r.wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	noneLeft(t)
}

func TestWebTransportConfigErrors(t *testing.T) {
	base := func() dedicated.Config {
		return dedicated.Config{Server: engine.ServerConfig{ProtocolID: 1, PrivateKey: make([]byte, 32)},
			Bind: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}}
	}
	for _, tc := range []struct {
		name string
		edit func(*dedicated.Config)
		want string
	}{
		{"public without listener", func(c *dedicated.Config) {
			c.WebTransportPublic = netip.MustParseAddrPort("192.0.2.1:443")
		}, "without Config.WebTransport"},
		{"public unspecified", func(c *dedicated.Config) {
			c.WebTransport = &webtransport.Config{Addr: netip.MustParseAddrPort("127.0.0.1:0")}
			c.WebTransportPublic = netip.MustParseAddrPort("0.0.0.0:443")
		}, "WebTransportPublic 0.0.0.0:443"},
		{"listener config", func(c *dedicated.Config) {
			c.WebTransport = &webtransport.Config{Addr: netip.MustParseAddrPort("127.0.0.1:0"), MaxSessions: -1}
		}, "MaxSessions -1; allowed"},
		{"public needed", func(c *dedicated.Config) {
			c.Server.PublicAddresses = []netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:40000")}
			c.WebTransport = &webtransport.Config{Addr: netip.MustParseAddrPort("0.0.0.0:0")}
		}, "WebTransportPublic is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			tc.edit(&cfg)
			err := dedicated.Run(context.Background(), cfg, dedicated.Echo())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v; want an error about %q", err, tc.want)
			}
		})
	}
}

func containsAddr(list []netip.AddrPort, a netip.AddrPort) bool {
	for _, b := range list {
		if a == b {
			return true
		}
	}
	return false
}
