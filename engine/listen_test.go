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

// TestListenDialClient connects a DialClient to a server Listening on both
// families in the default mode, over IPv4 and over IPv6; the client waits
// for data with Wait instead of sleeping.
func TestListenDialClient(t *testing.T) {
	cfg := ServerConfig{ProtocolID: 5, PrivateKey: testPrivateKey, Shards: 1}
	srv, err := Listen(cfg, batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"), netip.MustParseAddrPort("[::1]:0"))
	if err != nil {
		srv, err = Listen(cfg, batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
		if err != nil {
			t.Fatal(err)
		}
	}
	defer srv.Close()
	if n := len(srv.LocalAddrs()); n != len(srv.PublicAddresses()) {
		t.Fatalf("%d shards for %d addresses with one shard each", n, len(srv.PublicAddresses()))
	}
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
			if err := c.Wait(deadline); err != nil {
				t.Fatal(err)
			}
		}
		if c.State() != Connected {
			t.Fatalf("client to %v: %v", addr, c.State())
		}
		if err := c.Close(); err != nil { // sends the disconnect packets
			t.Fatalf("close: %v", err)
		}
	}
	if _, err := Listen(cfg, batchio.Config{}); err == nil {
		t.Fatal("Listen without addresses succeeded")
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

// TestListenWith: a conn given to ListenWith is one more shard that
// clients connect through, and Close leaves it open for its owner.
func TestListenWith(t *testing.T) {
	extra, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	cfg := ServerConfig{ProtocolID: 5, PrivateKey: testPrivateKey, Shards: 2}
	srv, err := ListenWith(cfg, batchio.Config{}, []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}, extra)
	if err != nil {
		t.Fatal(err)
	}
	if addrs := srv.LocalAddrs(); len(addrs) != 3 || addrs[2] != extra.LocalAddr() {
		t.Fatalf("shards on %v; want two sockets and then %v", addrs, extra.LocalAddr())
	}
	if pub := srv.PublicAddresses(); len(pub) != 2 || pub[1] != extra.LocalAddr() {
		t.Fatalf("public addresses %v; want the bind's and %v", pub, extra.LocalAddr())
	}
	c, err := DialClient(ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	token, _ := GenerateConnectToken(TokenParams{ProtocolID: 5, PrivateKey: testPrivateKey, ClientID: 1,
		PublicAddresses: []netip.AddrPort{extra.LocalAddr()}, ExpireSeconds: 30, TimeoutSeconds: 5})
	if err := c.Connect(token, time.Now()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); c.State() != Connected && time.Now().Before(deadline); {
		c.Update(time.Now())
		_ = c.Wait(deadline)
	}
	if c.State() != Connected {
		t.Fatalf("client through the extra conn: %v", c.State())
	}
	srv.Close()
	if _, err := extra.WriteBatch([]batchio.Message{{Buf: []byte{1}, N: 1, Addr: extra.LocalAddr()}}); err != nil {
		t.Fatalf("the server closed a conn it was given: %v", err)
	}
}
