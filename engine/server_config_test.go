package engine

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

func TestServerConfigValidation(t *testing.T) {
	bound := batchiotest.NewConn(srvAddr)
	wildcard := batchiotest.NewConn(netip.MustParseAddrPort("0.0.0.0:40000"))
	anyPort := batchiotest.NewConn(netip.MustParseAddrPort("10.0.0.1:0"))
	ok := func() ServerConfig { return ServerConfig{PrivateKey: testPrivateKey, ProtocolID: 1, Manual: true} }
	for _, c := range []struct {
		name  string
		edit  func(*ServerConfig)
		conns []batchio.Conn
		want  string // substring of the error; "" means valid
	}{
		{"defaults", nil, nil, ""},
		{"short private key", func(c *ServerConfig) { c.PrivateKey = c.PrivateKey[:31] }, nil, "PrivateKey is 31 bytes"},
		{"negative max clients", func(c *ServerConfig) { c.MaxClients = -1 }, nil, "MaxClients -1; allowed 1 to 65536"},
		{"too many clients", func(c *ServerConfig) { c.MaxClients = MaxServerClients + 1 }, nil, "allowed 1 to 65536"},
		{"16384 clients", func(c *ServerConfig) { c.MaxClients = 16384 }, nil, ""},
		{"event queue not a power of two", func(c *ServerConfig) { c.EventQueueSize = 3 }, nil, "EventQueueSize 3; want a power of two from 4 to 1048576"},
		{"event queue too long", func(c *ServerConfig) { c.EventQueueSize = 1 << 21 }, nil, "power of two"},
		{"send queue in manual mode", func(c *ServerConfig) { c.SendQueueSize = 8 }, nil, "SendQueueSize 8 is for the default mode"},
		{"send queue not a power of two", func(c *ServerConfig) { c.Manual = false; c.SendQueueSize = 5 }, nil, "SendQueueSize 5; want a power of two"},
		{"loopback in the default mode", func(c *ServerConfig) { c.Manual = false; c.SendLoopbackPacket = func(int, []byte, uint64) {} }, nil,
			"SendLoopbackPacket is set, but loopback clients need the manual mode"},
		{"shards with conns", func(c *ServerConfig) { c.Shards = 1 }, nil, "Shards 1 is for Listen"},
		{"negative mappings", func(c *ServerConfig) { c.MaxEncryptionMappings = -1 }, nil, "MaxEncryptionMappings -1"},
		{"negative token history", func(c *ServerConfig) { c.TokenHistorySize = -1 }, nil, "TokenHistorySize -1"},
		{"negative token lifetime", func(c *ServerConfig) { c.MaxConnectTokenLifetime = -time.Second }, nil, "MaxConnectTokenLifetime -1s; allowed whole seconds from 1s to 24h0m0s"},
		{"sub-second token lifetime", func(c *ServerConfig) { c.MaxConnectTokenLifetime = 1500 * time.Millisecond }, nil, "MaxConnectTokenLifetime 1.5s"},
		{"token lifetime over a day", func(c *ServerConfig) { c.MaxConnectTokenLifetime = 25 * time.Hour }, nil, "MaxConnectTokenLifetime 25h0m0s"},
		{"no decrypt limit", func(c *ServerConfig) { c.TokenDecryptsPerSecond = -1 }, nil, ""},
		{"negative decrypt rate", func(c *ServerConfig) { c.TokenDecryptsPerSecond = -2 }, nil, "TokenDecryptsPerSecond -2; allowed 1 to 16777216, or -1"},
		{"decrypt rate too high", func(c *ServerConfig) { c.TokenDecryptsPerSecond = 1<<24 + 1 }, nil, "TokenDecryptsPerSecond 16777217"},
		{"no conns", nil, []batchio.Conn{}, "at least one conn"},
		{"nil conn", nil, []batchio.Conn{bound, nil}, "conn 1 is nil"},
		{"wildcard without public address", nil, []batchio.Conn{wildcard}, "PublicAddresses is required"},
		{"port 0 without public address", nil, []batchio.Conn{anyPort}, "PublicAddresses is required"},
		{"wildcard with public address", func(c *ServerConfig) { c.PublicAddresses = []netip.AddrPort{srvAddr} }, []batchio.Conn{wildcard}, ""},
		{"unspecified public address", func(c *ServerConfig) {
			c.PublicAddresses = []netip.AddrPort{netip.MustParseAddrPort("[::]:40000")}
		}, nil, "unspecified"},
		{"public address with zone", func(c *ServerConfig) {
			c.PublicAddresses = []netip.AddrPort{netip.MustParseAddrPort("[fe80::1%eth0]:40000")}
		}, nil, "zone"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok()
			if c.edit != nil {
				c.edit(&cfg)
			}
			conns := c.conns
			if conns == nil {
				conns = []batchio.Conn{bound}
			}
			s, err := NewServer(cfg, conns...)
			if c.want == "" {
				if err != nil {
					t.Fatalf("valid config rejected: %v", err)
				}
				s.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want one containing %q", err, c.want)
			}
			if s != nil {
				t.Fatal("server returned with an error")
			}
		})
	}
}

func TestServerConfigDefaults(t *testing.T) {
	s, err := NewServer(ServerConfig{PrivateKey: testPrivateKey}, batchiotest.NewConn(srvAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.cfg
	if c.MaxClients != DefaultMaxClients || c.EventQueueSize != DefaultQueueSize || c.SendQueueSize != DefaultQueueSize ||
		c.MaxEncryptionMappings != MinTokenHistorySize || c.TokenHistorySize != 8*DefaultMaxClients ||
		c.MaxConnectTokenLifetime != 30*time.Second || c.KeepAliveInterval != PacketSendInterval ||
		c.TokenDecryptsPerSecond != DefaultTokenDecryptsPerSecond || c.Clock == nil || c.Logger == nil {
		t.Fatalf("defaults %+v", c)
	}
	if len(s.shards) != 1 || s.shards[0].outbox == nil || s.shards[0].maps.part.n != 0 || len(s.shards[0].maps.entries) != MinTokenHistorySize {
		t.Fatal("one shard with a send queue and the mappings")
	}
	if got := s.PublicAddresses(); len(got) != 1 || got[0] != srvAddr {
		t.Fatalf("public addresses default to %v, want the conn's %v", got, srvAddr)
	}
	if s.MaxClients() != DefaultMaxClients {
		t.Fatalf("MaxClients() = %d", s.MaxClients())
	}
}

// TestServerCountsDropsByReason feeds one bad datagram at a time and checks
// that exactly its reason's counter moved.
func TestServerCountsDropsByReason(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{EventQueueSize: 4})
	a := h.peer("192.0.2.1:5000", 1, nil)
	a.connect()
	pending := h.peer("192.0.2.2:5000", 2, nil)
	pending.challenged()
	b := h.peer("192.0.2.3:5000", 3, nil)
	b.connect()
	h.hold = true // payloads stay in the event queue, which fills
	stranger := netip.MustParseAddrPort("198.51.100.1:9")

	junk := func(prefix byte, n int) []byte {
		p := make([]byte, n)
		p[0] = prefix
		return p
	}
	corrupt := func(pkt []byte) []byte { pkt[len(pkt)-1] ^= 1; return pkt }
	replayed := a.payload([]byte("r"))
	type dropCase struct {
		name   string
		from   netip.AddrPort
		pkt    func() []byte
		codec  codec.DropReason
		server ServerDropReason
	}
	for _, c := range []dropCase{
		{"too small", stranger, func() []byte { return junk(0x15, 17) }, codec.ReasonTooSmall, 0},
		{"invalid type", a.addr, func() []byte { return junk(0x17, 40) }, codec.ReasonInvalidType, 0},
		{"challenge to server", a.addr, func() []byte { return junk(0x12, 40) }, codec.ReasonTypeNotAllowed, 0},
		{"sequence bytes", a.addr, func() []byte { return junk(0x95, 40) }, codec.ReasonSequenceBytes, 0},
		{"keep-alive body size", a.addr, func() []byte { return junk(0x14, 1+1+9+16) }, codec.ReasonBodySize, 0},
		{"no key", stranger, func() []byte { return a.payload([]byte("x")) }, codec.ReasonNoKey, 0},
		{"decrypt", a.addr, func() []byte { return corrupt(a.payload([]byte("x"))) }, codec.ReasonDecrypt, 0},
		{"first copy", a.addr, func() []byte { return replayed }, 0, 0},
		{"replayed", a.addr, func() []byte { return replayed }, codec.ReasonReplayed, 0},
		{"payload before connected", pending.addr, func() []byte { return pending.payload([]byte("x")) }, 0, ServerDropNotConnected},
		{"keep-alive before connected", pending.addr, func() []byte { return pending.keepAlive() }, 0, ServerDropNotConnected},
		{"queue fills", a.addr, func() []byte { return a.payload([]byte("2")) }, 0, 0},
		{"queue fills", b.addr, func() []byte { return b.payload([]byte("1")) }, 0, 0},
		{"queue fills", b.addr, func() []byte { return b.payload([]byte("2")) }, 0, 0},
		{"queue full", a.addr, func() []byte { return a.payload([]byte("3")) }, 0, ServerDropAppBacklog},
	} {
		before := h.s.Stats()
		h.deliver(0, c.from, c.pkt())
		after := h.s.Stats()
		wantTotal := before.Dropped()
		if c.codec != 0 {
			wantTotal++
			if after.CodecDrops[c.codec] != before.CodecDrops[c.codec]+1 {
				t.Errorf("%s: %v count did not increase", c.name, c.codec)
			}
		}
		if c.server != 0 {
			wantTotal++
			if after.Drops[c.server] != before.Drops[c.server]+1 {
				t.Errorf("%s: %v count did not increase", c.name, c.server)
			}
		}
		if after.Dropped() != wantTotal {
			t.Errorf("%s: %d drops in total, want %d (another reason counted)", c.name, after.Dropped(), wantTotal)
		}
	}
	if st := h.s.Stats(); st.PacketsIn == 0 || st.BytesIn == 0 || st.PacketsOut == 0 || st.BytesOut == 0 {
		t.Fatalf("traffic counters not counting: %+v", st)
	}
}

func TestServerCountsSendFailures(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{})
	a := h.peer("192.0.2.1:5000", 1, nil)
	h.conns[0].Refuse = true
	a.send(a.request())
	if st := h.s.Stats(); st.SendFailures != 1 || st.PacketsOut != 0 {
		t.Fatalf("SendFailures %d PacketsOut %d; want 1, 0", st.SendFailures, st.PacketsOut)
	}
}

// TestServerKeepAliveInterval: the configured send rate drives idle
// keep-alives, and out-of-range values are refused with the allowed range.
func TestServerKeepAliveInterval(t *testing.T) {
	h := newSrvHarness(t, ServerConfig{KeepAliveInterval: 250 * time.Millisecond})
	p := h.peer("192.0.2.9:1000", 5, nil)
	p.connect()
	p.received() // drop what the handshake left
	for range 100 {
		h.step(10 * time.Millisecond) // one idle second
	}
	if n := len(p.received()); n != 4 {
		t.Fatalf("%d keep-alives in an idle second at 4 Hz, want 4", n)
	}
	for _, d := range []time.Duration{-time.Second, time.Microsecond, 11 * time.Second} {
		_, err := NewServer(ServerConfig{ProtocolID: 1, PrivateKey: testPrivateKey, KeepAliveInterval: d}, batchiotest.NewConn(srvAddr))
		if err == nil || !strings.Contains(err.Error(), "KeepAliveInterval") || !strings.Contains(err.Error(), "1ms to 10s") {
			t.Errorf("KeepAliveInterval %v: %v", d, err)
		}
	}
}
