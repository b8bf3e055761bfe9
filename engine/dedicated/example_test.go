package dedicated_test

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/dedicated"
)

// chat is a game: it counts its players and relays every payload to all of
// them, the sender included, at most once per tick.
type chat struct {
	players int
	pending [][]byte
}

func (g *chat) Connect(*engine.Server, *engine.Event)    { g.players++ }
func (g *chat) Disconnect(*engine.Server, *engine.Event) { g.players-- }

func (g *chat) Payload(_ *engine.Server, ev *engine.Event) {
	if len(g.pending) < 64 { // bounded: the rest waits for the clients to resend
		g.pending = append(g.pending, append([]byte(nil), ev.Payload...)) // ev is only valid during the call
	}
}

func (g *chat) Tick(srv *engine.Server, _ time.Time) {
	for _, p := range g.pending {
		_ = srv.Broadcast(p)
	}
	g.pending = g.pending[:0]
}

// A dedicated server with a game of its own, drained on SIGTERM.
func Example() {
	key := make([]byte, 32) // in production: the token service's key, from a file or secret
	rand.Read(key)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := dedicated.Run(ctx, dedicated.Config{
		Server:     engine.ServerConfig{ProtocolID: 0x1122334455667788, PrivateKey: key, MaxClients: 64},
		Bind:       []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:40000")},
		HTTPAddr:   "127.0.0.1:8080", // /metrics, /healthz, /readyz
		TickRate:   20,
		DrainGrace: 10 * time.Second,
		Logger:     slog.New(slog.NewJSONHandler(os.Stderr, nil)),
	}, &chat{})
	if err != nil {
		slog.Error("server failed", "err", err)
	}
}
