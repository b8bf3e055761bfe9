package engine

import (
	"net/netip"
	"testing"
	"time"
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
			PublicAddresses: []netip.AddrPort{addr}, ExpireSeconds: 10, TimeoutSeconds: 5})
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
