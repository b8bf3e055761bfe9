package engine

import (
	"bytes"
	"log/slog"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

// TestListenServerDialClient connects a DialClient to a ListenServer bound
// to both families, over IPv4 and over IPv6.
func TestListenServerDialClient(t *testing.T) {
	srv, err := ListenServer(ServerConfig{ProtocolID: 5, PrivateKey: testPrivateKey},
		netip.MustParseAddrPort("127.0.0.1:0"), netip.MustParseAddrPort("[::1]:0"))
	if err != nil {
		srv, err = ListenServer(ServerConfig{ProtocolID: 5, PrivateKey: testPrivateKey}, netip.MustParseAddrPort("127.0.0.1:0"))
		if err != nil {
			t.Fatal(err)
		}
	}
	defer srv.Close()
	for _, addr := range srv.PublicAddresses() {
		c, err := DialClient(ClientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		token, _ := GenerateConnectToken(TokenParams{ProtocolID: 5, PrivateKey: testPrivateKey, ClientID: uint64(addr.Port()),
			PublicAddresses: []netip.AddrPort{addr}, ExpireSeconds: 30, TimeoutSeconds: 5})
		if err := c.Connect(token, time.Now()); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for c.State() != Connected && time.Now().Before(deadline) {
			c.Update(time.Now())
			srv.Update(time.Now())
			time.Sleep(time.Millisecond)
		}
		if c.State() != Connected {
			t.Fatalf("client to %v: %v", addr, c.State())
		}
		c.Disconnect(time.Now())
		if err := c.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	}
	if _, err := ListenServer(ServerConfig{ProtocolID: 5, PrivateKey: testPrivateKey}); err == nil {
		t.Fatal("ListenServer without addresses succeeded")
	}
}

// TestBufferShortfallWarning: a socket that got less buffer than asked is
// reported through the logger.
func TestBufferShortfallWarning(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	// Asking for more than the kernel's cap (without FORCE) is refused
	// quietly and read back smaller; as root FORCE may grant it, so ask for
	// an amount no kernel grants.
	c, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{RecvBuffer: 1 << 30})
	if err != nil {
		t.Skip(err)
	}
	defer c.Close()
	warnBufferShortfall(log, c)
	if runtime.GOOS == "linux" && !strings.Contains(buf.String(), "smaller socket buffers") {
		t.Fatalf("no warning for a 1 GiB receive buffer: %q", buf.String())
	}
}
