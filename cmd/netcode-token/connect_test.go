package main

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/engine"
)

// A token from mint (either alphabet) connects an engine client to an
// engine server over the in-memory network, on the fake clock mint used:
// the server sees the client id and user data from the command line.
func TestMintedTokenConnects(t *testing.T) {
	for _, alphabet := range []string{"standard", "url"} {
		t.Run(alphabet, func(t *testing.T) {
			network, err := batchiotest.NewMemNetwork(batchiotest.MemConfig{})
			if err != nil {
				t.Fatal(err)
			}
			sconn, err := network.Listen(netip.MustParseAddrPort("10.0.0.1:40000"))
			if err != nil {
				t.Fatal(err)
			}
			cconn, err := network.Listen(netip.MustParseAddrPort("10.1.0.1:5000"))
			if err != nil {
				t.Fatal(err)
			}
			key, _ := hex.DecodeString(testKeyHex)
			var connectedID uint64
			var userData [256]byte
			onEvent := func(ev *engine.Event) {
				if ev.Kind == engine.EventConnect {
					connectedID, userData = ev.ClientID, *ev.UserData
				}
			}
			// The server started before the token was minted (the restart
			// rule refuses tokens minted in its first seconds).
			started := testNow.Add(-engine.ConnectTokenClockSkew - time.Second)
			srv, err := engine.NewServer(engine.ServerConfig{
				ProtocolID: 0x1122334455667788, PrivateKey: key, MaxClients: 4,
				Manual: true, Clock: func() time.Time { return started },
			}, sconn)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			client, err := engine.NewClient(engine.ClientConfig{}, cconn)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()

			args := []string{"mint", "-protocol", "1122334455667788", "-client-id", "42", "-addr", "192.0.2.99:40000", "-addr", "10.0.0.1:40000", "-user-data", "cafe"}
			if alphabet == "url" {
				args = append(args, "-url")
			}
			r := runCmd(t, keyVars, "", args...)
			if r.code != 0 {
				t.Fatalf("mint: %s", r.stderr)
			}
			token, err := engine.DecodeToken(strings.TrimSpace(r.stdout))
			if err != nil {
				t.Fatal(err)
			}
			now := testNow
			if err := client.Connect(token, now); err != nil {
				t.Fatal(err)
			}
			// The first address does not answer; the client moves on to the
			// second after its connect timeout.
			for i := 0; i < 4000 && client.State() != engine.Connected; i++ {
				now = now.Add(5 * time.Millisecond)
				client.Update(now)
				if err := srv.Update(now); err != nil {
					t.Fatal(err)
				}
				srv.Poll(onEvent)
			}
			if client.State() != engine.Connected || srv.NumConnectedClients() != 1 {
				t.Fatalf("client state %v, server has %d clients; want connected", client.State(), srv.NumConnectedClients())
			}
			if connectedID != 42 || !bytes.HasPrefix(userData[:], []byte{0xca, 0xfe, 0}) {
				t.Errorf("server sees client %d, user data %x...; want 42 and cafe", connectedID, userData[:4])
			}
			if client.ServerAddress() != netip.MustParseAddrPort("10.0.0.1:40000") {
				t.Errorf("connected to %v", client.ServerAddress())
			}
		})
	}
}
