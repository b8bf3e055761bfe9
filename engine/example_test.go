package engine_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

const protocolID = 0x1122334455667788

// A web backend mints a connect token for an authenticated client and hands
// it over HTTPS, usually as base64.
func ExampleGenerateConnectToken() {
	privateKey := make([]byte, 32) // shared with the dedicated servers; load it from a secret store
	if _, err := rand.Read(privateKey); err != nil {
		panic(err)
	}
	token, err := engine.GenerateConnectToken(engine.TokenParams{
		ProtocolID:      protocolID,
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

// A game server in the default mode: Listen opens a UDP socket per shard
// (two here, sharing the port) and each shard runs on a goroutine of its
// own. The game's loop polls events, sends, and waits for the next event.
// A player connects from another goroutine (another machine, in a game),
// says hello and leaves once answered.
func Example() {
	privateKey := make([]byte, 32) // shared with the web backend
	if _, err := rand.Read(privateKey); err != nil {
		panic(err)
	}
	server, err := engine.Listen(engine.ServerConfig{
		ProtocolID: protocolID,
		PrivateKey: privateKey,
		MaxClients: 64,
		Shards:     2,
	}, batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		panic(err)
	}
	defer server.Close()

	// The web backend's token for player 7.
	token, err := engine.GenerateConnectToken(engine.TokenParams{
		ProtocolID: protocolID, PrivateKey: privateKey, ClientID: 7,
		PublicAddresses: server.PublicAddresses(), ExpireSeconds: 30, TimeoutSeconds: 5,
	})
	if err != nil {
		panic(err)
	}
	go func() { // the player
		client, err := engine.DialClient(engine.ClientConfig{})
		if err != nil {
			panic(err)
		}
		defer client.Close() // leaves with disconnect packets
		if err := client.Connect(token, time.Now()); err != nil {
			panic(err)
		}
		said, buf := false, make([]byte, codec.MaxPayloadBytes)
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			client.Update(time.Now())
			if client.State() == engine.Connected && !said {
				_ = client.SendPacket([]byte("hello"))
				client.Flush()
				said = true
			}
			if _, _, ok := client.ReceivePacket(buf); ok {
				return
			}
			_ = client.Wait(deadline)
		}
	}()

	done := false
	for deadline := time.Now().Add(5 * time.Second); !done && time.Now().Before(deadline); {
		server.Wait(deadline) // until there are events
		server.Poll(func(ev *engine.Event) {
			switch ev.Kind {
			case engine.EventConnect:
				fmt.Printf("client %d connected from %v\n", ev.ClientID, ev.Address.Addr())
			case engine.EventPayload:
				fmt.Printf("client %d says %q\n", ev.ClientID, ev.Payload)
				_ = server.SendPacket(ev.ClientIndex, []byte("welcome"))
			case engine.EventDisconnect:
				fmt.Printf("client %d left: %v\n", ev.ClientID, ev.Reason)
				done = true
			}
		})
	}
	// Output:
	// client 7 connected from 127.0.0.1
	// client 7 says "hello"
	// client 7 left: client disconnected
}

// A listen server: the host's own player is a loopback client of a
// manual-mode server that serves remote players over UDP beside it.
// Payloads between the two are handed over by callbacks, without packets.
// In manual mode the game's loop drives the server with Update; the
// events and sends are the same as in the default mode.
func ExampleServer_ConnectLoopbackClient() {
	privateKey := make([]byte, 32)
	if _, err := rand.Read(privateKey); err != nil {
		panic(err)
	}
	var host *engine.Client
	server, err := engine.Listen(engine.ServerConfig{
		ProtocolID: protocolID,
		PrivateKey: privateKey,
		MaxClients: 8,
		Manual:     true,
		SendLoopbackPacket: func(clientIndex int, payload []byte, sequence uint64) {
			_ = host.ProcessLoopbackPacket(payload, sequence)
		},
	}, batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		panic(err)
	}
	defer server.Close()
	host, err = engine.NewClient(engine.ClientConfig{
		SendLoopbackPacket: func(clientIndex int, payload []byte, sequence uint64) {
			_ = server.ProcessLoopbackPacket(clientIndex, payload, sequence)
		},
	})
	if err != nil {
		panic(err)
	}
	// The host takes slot 0.
	if err := server.ConnectLoopbackClient(0, 1, []byte("host")); err != nil {
		panic(err)
	}
	if err := host.ConnectLoopback(0, server.MaxClients()); err != nil {
		panic(err)
	}

	handle := func(ev *engine.Event) {
		switch ev.Kind {
		case engine.EventConnect:
			fmt.Printf("client %d (%s) connected, loopback %v\n", ev.ClientID, bytes.TrimRight(ev.UserData[:], "\x00"), ev.Loopback)
		case engine.EventPayload:
			fmt.Printf("server got %q\n", ev.Payload)
			_ = server.SendPacket(ev.ClientIndex, []byte("pong"))
		case engine.EventDisconnect:
			fmt.Printf("client %d left: %v\n", ev.ClientID, ev.Reason)
		}
	}
	// One frame of the game.
	_ = host.SendPacket([]byte("ping"))
	if err := server.Update(time.Now()); err != nil {
		panic(err)
	}
	server.Poll(handle)
	buf := make([]byte, codec.MaxPayloadBytes)
	if n, _, ok := host.ReceivePacket(buf); ok {
		fmt.Printf("host got %q\n", buf[:n])
	}

	// The host quits.
	_ = server.DisconnectLoopbackClient(0)
	host.DisconnectLoopback()
	server.Poll(handle)
	// Output:
	// client 1 (host) connected, loopback true
	// server got "ping"
	// host got "pong"
	// client 1 left: loopback client disconnected
}

// A client's loop: run Update, then Wait until a datagram may be waiting,
// the client's next timer is due or the deadline (a game's next frame)
// passes, instead of sleeping. The server here echoes what it gets.
func ExampleClient_Wait() {
	privateKey := make([]byte, 32)
	if _, err := rand.Read(privateKey); err != nil {
		panic(err)
	}
	server, err := engine.Listen(engine.ServerConfig{ProtocolID: protocolID, PrivateKey: privateKey, Shards: 1},
		batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		panic(err)
	}
	defer server.Close()
	go func() { // the server's game loop, until Close
		echo := func(ev *engine.Event) {
			if ev.Kind == engine.EventPayload {
				_ = server.SendPacket(ev.ClientIndex, ev.Payload)
			}
		}
		for server.Ready() {
			server.Poll(echo)
			server.Wait(time.Now().Add(time.Second))
		}
	}()
	token, err := engine.GenerateConnectToken(engine.TokenParams{
		ProtocolID: protocolID, PrivateKey: privateKey, ClientID: 9,
		PublicAddresses: server.PublicAddresses(), ExpireSeconds: 30, TimeoutSeconds: 5,
	})
	if err != nil {
		panic(err)
	}

	client, err := engine.DialClient(engine.ClientConfig{})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	if err := client.Connect(token, time.Now()); err != nil {
		panic(err)
	}
	sent, buf := false, make([]byte, codec.MaxPayloadBytes)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		client.Update(time.Now())
		if client.State() == engine.Connected && !sent {
			_ = client.SendPacket([]byte("ping"))
			client.Flush()
			sent = true
		}
		if n, _, ok := client.ReceivePacket(buf); ok {
			fmt.Printf("%v as client %d: got %q back\n", client.State(), client.ClientIndex(), buf[:n])
			break
		}
		if err := client.Wait(deadline); err != nil {
			panic(err)
		}
	}
	// Output:
	// connected as client 0: got "ping" back
}
