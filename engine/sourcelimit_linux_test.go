//go:build linux

package engine

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

// TestSourceLimitStats: a server whose sockets have the per-source limit
// counts what it drops in Stats, as part of KernelDrops.
func TestSourceLimitStats(t *testing.T) {
	cfg := ServerConfig{ProtocolID: shardProtocol, PrivateKey: testPrivateKey, MaxClients: 8}
	srv, err := Listen(cfg, batchio.Config{SourceLimit: batchio.SourceLimit{Rate: 50, Burst: 10}}, netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Skipf("no source limit here: %v", err)
	}
	defer srv.Close()
	tx, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(srv.PublicAddresses()[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	junk := make([]byte, 1119)
	junk[0] = 0x5 // a payload packet's type byte; no such client
	for range 500 {
		tx.Write(junk)
	}
	deadline := time.Now().Add(2 * time.Second)
	for srv.Stats().SourceDrops < 400 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := srv.Stats()
	if st.SourceDrops < 400 || st.KernelDrops < st.SourceDrops {
		t.Errorf("after 500 datagrams from one source at 50/s, burst 10: SourceDrops %d, KernelDrops %d; want 400 or more, within KernelDrops", st.SourceDrops, st.KernelDrops)
	}
}

// limitErrConn is a conn whose socket could not attach its limit.
type limitErrConn struct{ batchio.Conn }

func (limitErrConn) Stats() batchio.Stats {
	return batchio.Stats{SourceLimitErr: errors.New("eBPF socket filter unavailable: test")}
}

// TestSourceLimitFallbackLogged: a socket that runs without the limit it
// was asked for (Optional) is logged with the reason.
func TestSourceLimitFallbackLogged(t *testing.T) {
	c, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out bytes.Buffer
	warnNoSourceLimit(slog.New(slog.NewTextHandler(&out, nil)), limitErrConn{c})
	if s := out.String(); !strings.Contains(s, "per-source limit is off") || !strings.Contains(s, "eBPF socket filter unavailable") {
		t.Errorf("log: %q; want the fallback and its reason", s)
	}
	out.Reset()
	warnNoSourceLimit(slog.New(slog.NewTextHandler(&out, nil)), c)
	if out.Len() != 0 {
		t.Errorf("a socket without a limit asked for logged %q", out.String())
	}
}
