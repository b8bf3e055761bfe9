package webtransport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestConfigErrors(t *testing.T) {
	addr := netip.MustParseAddrPort("127.0.0.1:0")
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no addr", Config{}, "Config.Addr is required"},
		{"path", Config{Addr: addr, Path: "netcode"}, "starting with /"},
		{"origin", Config{Addr: addr, AllowedOrigins: []string{"game.example"}}, "scheme://host"},
		{"max sessions", Config{Addr: addr, MaxSessions: -1}, "MaxSessions -1; allowed 1 to"},
		{"rate", Config{Addr: addr, SessionsPerSecond: math.NaN()}, "SessionsPerSecond NaN; allowed more than 0"},
		{"pending", Config{Addr: addr, MaxSessions: 4, MaxPendingSessions: 5}, "MaxPendingSessions 5; allowed 1 to MaxSessions (4)"},
		{"timeout", Config{Addr: addr, IdleTimeout: time.Microsecond}, "IdleTimeout 1µs; allowed 10ms to 1h0m0s"},
		{"datagram", Config{Addr: addr, MaxDatagramSize: 2000}, "MaxDatagramSize 2000; allowed 64 to 1300"},
		{"share", Config{Addr: addr, InboxSize: 64, SessionQueue: 65}, "SessionQueue 65; allowed 1 to InboxSize (64)"},
		{"send queue", Config{Addr: addr, SendQueue: 1 << 13}, "SendQueue 8192; allowed 1 to 4096"},
		{"burst", Config{Addr: addr, DatagramBurst: -3}, "DatagramBurst -3; allowed 1 to"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.withDefaults()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one containing %q", err, tc.want)
			}
			if _, err := Listen(tc.cfg); err == nil {
				t.Fatal("Listen accepted the config")
			}
		})
	}
	cfg, err := Config{Addr: addr}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != DefaultPath || cfg.MaxSessions != DefaultMaxSessions || cfg.SessionQueue != DefaultSessionQueue || cfg.MaxDatagramSize != DefaultMaxDatagramSize {
		t.Fatalf("defaults not applied: %+v", cfg)
	}
}

func TestDevCertificate(t *testing.T) {
	if _, err := DevCertificate(15 * 24 * time.Hour); err == nil || !strings.Contains(err.Error(), "allowed") {
		t.Fatalf("15-day certificate: error %v; want one naming the allowed validity", err)
	}
	if _, err := DevCertificate(time.Minute); err == nil {
		t.Fatal("1-minute certificate accepted")
	}
	cert, err := DevCertificate(MaxDevCertificateValidity, "game.example", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	if d := leaf.NotAfter.Sub(leaf.NotBefore); d > MaxDevCertificateValidity {
		t.Fatalf("valid for %v; browsers allow at most %v", d, MaxDevCertificateValidity)
	}
	if !leaf.NotBefore.Before(time.Now()) || !leaf.NotAfter.After(time.Now()) {
		t.Fatal("not valid now")
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Fatalf("key %T; want ECDSA P-256", leaf.PublicKey)
	}
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "game.example" || len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal([]byte{192, 0, 2, 1}) {
		t.Fatalf("names %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	c := listen(t, Config{Certificate: &cert})
	if c.CertificateHash() != sha256.Sum256(cert.Certificate[0]) {
		t.Fatal("CertificateHash is not the SHA-256 of the leaf")
	}
}

func TestDialChecksPinnedHash(t *testing.T) {
	checkGoroutines(t)
	c := listen(t, Config{})
	wrong := c.CertificateHash()
	wrong[0] ^= 1
	if cl, err := dialPinned(c, wrong); err == nil {
		cl.Close()
		t.Fatal("dial accepted a certificate whose hash is not pinned")
	}
}

func dialPinned(c *Conn, h [32]byte) (*ClientConn, error) {
	ctx, cancel := contextTimeout()
	defer cancel()
	return Dial(ctx, c.URL("127.0.0.1"), h)
}
