package engineconn_test

import (
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/dedicated"
	"github.com/netcode-go/netcode/message"
	"github.com/netcode-go/netcode/message/engineconn"
)

// chatGame is a dedicated.Game with message channels: every event goes
// to the adapter first, acks included (dedicated.AckGame), and each tick
// ends with Flush. Channel 0 (reliable-ordered) carries chat, relayed to
// everyone; channel 2 (unreliable) carries state.
type chatGame struct {
	msg     *engineconn.Server
	players map[int]bool
}

var _ dedicated.AckGame = (*chatGame)(nil)

// adapter makes the adapter at the first event: dedicated.Run makes the
// server.
func (g *chatGame) adapter(srv *engine.Server) *engineconn.Server {
	if g.msg == nil {
		m, err := engineconn.NewServer(srv, message.DefaultConfig(), time.Now())
		if err != nil {
			panic(err) // a config error: the server has no reliable endpoints
		}
		g.msg = m
	}
	return g.msg
}

func (g *chatGame) Connect(srv *engine.Server, ev *engine.Event) {
	g.adapter(srv).Handle(ev)
	g.players[ev.ClientIndex] = true
}

func (g *chatGame) Disconnect(srv *engine.Server, ev *engine.Event) {
	g.adapter(srv).Handle(ev)
	delete(g.players, ev.ClientIndex)
}

func (g *chatGame) Payload(srv *engine.Server, ev *engine.Event) { g.adapter(srv).Handle(ev) }
func (g *chatGame) Acks(srv *engine.Server, ev *engine.Event)    { g.adapter(srv).Handle(ev) }

func (g *chatGame) Tick(_ *engine.Server, now time.Time) {
	if g.msg == nil {
		return // no one yet
	}
	for i := range g.players {
		c := g.msg.Conn(i)
		for line, ok := c.Receive(0); ok; line, ok = c.Receive(0) {
			for j := range g.players {
				// A full queue is a player far behind: the game decides
				// (here it skips the line for that player).
				_ = g.msg.Conn(j).Send(0, line)
			}
		}
		_ = c.Send(2, []byte("the world as player i sees it"))
	}
	g.msg.Flush(now)
}

// A dedicated server's game with message channels: the server config
// turns on reliable endpoints; the game is an AckGame that hands every
// event to its engineconn.Server.
func Example_dedicatedGame() {
	rcfg := engine.DefaultReliableConfig()
	cfg := dedicated.Config{Server: engine.ServerConfig{Reliable: &rcfg}}
	game := &chatGame{players: map[int]bool{}}
	_, _ = cfg, game // dedicated.Run(ctx, cfg, game)
}
