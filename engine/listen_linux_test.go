//go:build linux

package engine

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/netcode-go/netcode/batchio"
)

// TestListenRefusesServedAddress: a second multi-shard server on the
// first's address fails with an error naming it, and the first keeps
// serving on all its shards.
func TestListenRefusesServedAddress(t *testing.T) {
	cfg := ServerConfig{ProtocolID: shardProtocol, PrivateKey: testPrivateKey, MaxClients: 8, Shards: 2}
	first, err := Listen(cfg, batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	addr := first.PublicAddresses()[0]
	second, err := Listen(cfg, batchio.Config{}, addr)
	if err == nil {
		second.Close()
		t.Fatalf("a second server bound %v", addr)
	}
	if !errors.Is(err, batchio.ErrAddrServed) || !strings.Contains(err.Error(), addr.String()) {
		t.Errorf("second server: %v; want batchio.ErrAddrServed naming %v", err, addr)
	}
	if got := len(first.ShardStats(nil)); got != 2 {
		t.Errorf("first server has %d shards; want 2", got)
	}
}
