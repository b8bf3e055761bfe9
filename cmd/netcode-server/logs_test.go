package main

import (
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
)

// TestLogFormats runs a two-shard server through a player's connect and
// a drain, and checks every JSON line: ids are fixed-width hex strings,
// durations are Go duration strings, no number is large enough to be an
// id or nanoseconds, and each address is named once.
func TestLogFormats(t *testing.T) {
	keyHex := newKeyHex(t)
	key, _ := hex.DecodeString(keyHex)
	logs, fields, stop := serve(t, []string{"-protocol", "1122334455667788", "-bind", "127.0.0.1:0", "-shards", "2"}, map[string]string{keyEnv: keyHex})
	udp := fields["udp"].([]any)
	if len(udp) != 1 {
		t.Errorf("udp %v; want the one bind address once, not once per shard", udp)
	}
	public := netip.MustParseAddrPort(udp[0].(string))
	tok, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: 0x1122334455667788, PrivateKey: key, ClientID: 0xfedcba9876543210,
		PublicAddresses: []netip.AddrPort{public}, ExpireSeconds: 30, TimeoutSeconds: 10})
	if err != nil {
		t.Fatal(err)
	}
	p := newClients(t)
	p.dial(tok)
	p.until(10*time.Second, "the player connected", func() bool { return p.clients[0].State() == engine.Connected })
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}

	hexID := regexp.MustCompile(`^0x[0-9a-f]{16}$`)
	durations := map[string]bool{"drain_grace": true, "grace": true, "took": true, "max_connect_token_lifetime": true, "timeout": true}
	seen := map[string]bool{}
	for line := range strings.Lines(logs.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("not JSON: %q", line)
			continue
		}
		for k, v := range rec {
			seen[k] = true
			switch {
			case k == "protocol" || k == "protocol_id" || k == "client_id":
				if s, ok := v.(string); !ok || !hexID.MatchString(s) {
					t.Errorf("%s: %s %#v; want 0x and 16 hex digits", rec["msg"], k, v)
				}
			case durations[k]:
				if s, ok := v.(string); !ok {
					t.Errorf("%s: %s %#v; want a duration string", rec["msg"], k, v)
				} else if _, err := time.ParseDuration(s); err != nil {
					t.Errorf("%s: %s %q: %v", rec["msg"], k, s, err)
				}
			}
			if x, ok := v.(float64); ok && (x >= 1<<31 || x <= -1<<31) {
				t.Errorf("%s: %s %v: a number this large is an id or nanoseconds", rec["msg"], k, x)
			}
			if list, ok := v.([]any); ok {
				for i := range list {
					for j := range i {
						if list[i] == list[j] {
							t.Errorf("%s: %s %v names %v twice", rec["msg"], k, list, list[i])
						}
					}
				}
			}
		}
	}
	if !strings.Contains(logs.String(), `"client_id":"0xfedcba9876543210"`) || !strings.Contains(logs.String(), `"protocol_id":"0x1122334455667788"`) {
		t.Errorf("the player's and the server's ids are not logged as hex:\n%s", logs)
	}
	for _, k := range []string{"drain_grace", "grace", "took", "max_connect_token_lifetime"} {
		if !seen[k] {
			t.Errorf("no %s in the logs; the check above did not run on it", k)
		}
	}
}
