package engine_test

import (
	"crypto/rand"
	"fmt"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

// A web backend mints a connect token for an authenticated client and hands
// it over HTTPS, usually as base64.
func ExampleGenerateConnectToken() {
	privateKey := make([]byte, 32) // shared with the dedicated servers; load it from a secret store
	if _, err := rand.Read(privateKey); err != nil {
		panic(err)
	}
	token, err := engine.GenerateConnectToken(engine.TokenParams{
		ProtocolID:      0x1122334455667788,
		PrivateKey:      privateKey,
		ClientID:        42,
		PublicAddresses: []netip.AddrPort{netip.MustParseAddrPort("203.0.113.10:40000")},
		ExpireSeconds:   30,
		TimeoutSeconds:  10,
		UserData:        []byte("player=42;team=red"),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(token), "bytes")
	fmt.Println(len(engine.EncodeToken(token)), "base64 characters")
	// Output:
	// 2048 bytes
	// 2732 base64 characters
}

// A dedicated server and a client on loopback: the client connects with a
// token, they exchange a payload each way, and the client disconnects.
// Both sides are driven by Update(now) from one loop here; a game calls
// them from its own tick.
func Example() {
	const protocolID = 0x1122334455667788
	privateKey := make([]byte, 32)
	if _, err := rand.Read(privateKey); err != nil {
		panic(err)
	}

	serverConn, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{})
	if err != nil {
		panic(err)
	}
	defer serverConn.Close()
	server, err := engine.NewServer(engine.ServerConfig{
		ProtocolID: protocolID,
		PrivateKey: privateKey,
		MaxClients: 64,
		OnConnect: func(clientIndex int, clientID uint64) {
			fmt.Printf("server: client %d connected in slot %d\n", clientID, clientIndex)
		},
		OnDisconnect: func(clientIndex int, reason engine.DisconnectReason) {
			fmt.Printf("server: slot %d: %v\n", clientIndex, reason)
		},
	}, serverConn)
	if err != nil {
		panic(err)
	}
	defer server.Close()

	token, err := engine.GenerateConnectToken(engine.TokenParams{
		ProtocolID: protocolID, PrivateKey: privateKey, ClientID: 7,
		PublicAddresses: []netip.AddrPort{serverConn.LocalAddr()},
		ExpireSeconds:   30, TimeoutSeconds: 5,
	})
	if err != nil {
		panic(err)
	}
	clientConn, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{})
	if err != nil {
		panic(err)
	}
	defer clientConn.Close()
	client, err := engine.NewClient(engine.ClientConfig{}, clientConn)
	if err != nil {
		panic(err)
	}
	defer client.Close()
	if err := client.Connect(token, time.Now()); err != nil {
		panic(err)
	}

	buf := make([]byte, codec.MaxPayloadBytes)
	gotServer, gotClient := false, false
	for step := 0; step < 5000 && !(gotServer && gotClient); step++ {
		now := time.Now()
		client.Update(now)
		server.Update(now)
		if client.State() == engine.Connected && step%10 == 0 {
			_ = client.SendPacket([]byte("hello server"))
		}
		for i := range server.MaxClients() {
			if n, _, ok := server.ReceivePacket(i, buf); ok && !gotServer {
				fmt.Printf("server: %q\n", buf[:n])
				gotServer = true
				_ = server.SendPacket(i, []byte("hello client"))
			}
		}
		if n, _, ok := client.ReceivePacket(buf); ok && !gotClient {
			fmt.Printf("client: %q\n", buf[:n])
			gotClient = true
		}
		time.Sleep(time.Millisecond)
	}
	client.Disconnect(time.Now())
	for step := 0; step < 1000 && server.NumConnectedClients() > 0; step++ {
		server.Update(time.Now())
		time.Sleep(time.Millisecond)
	}
	fmt.Println("client state:", client.State())
	// Output:
	// server: client 7 connected in slot 0
	// server: "hello server"
	// client: "hello client"
	// server: slot 0: client disconnected
	// client state: disconnected
}
