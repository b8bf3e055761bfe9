package main

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/message"
	"github.com/netcode-go/netcode/message/engineconn"
)

const (
	maxBots = 64
	// inputBytes: stamp (8), dx, dy.
	inputBytes = 10
	// playerBytes: id, x, y (int16 each).
	playerBytes = 5
)

// stateBytes: stamp (8), count, then the players.
func stateBytes(bots int) int { return 9 + bots*playerBytes }

type player struct {
	on   bool
	id   byte
	x, y int16
}

// serverGame is the server's side: the world, and the relay of chat.
type serverGame struct {
	srv     *engine.Server
	msg     *engineconn.Server
	players []player
	sentTo  []int // chat-channel messages sent to each slot this connection
	relayed int
	inputs  latencies
	buf     [1024]byte
	stalled []int
}

func newServerGame(srv *engine.Server, cfg message.Config, now time.Time) (*serverGame, error) {
	m, err := engineconn.NewServer(srv, cfg, now)
	if err != nil {
		return nil, err
	}
	return &serverGame{srv: srv, msg: m, players: make([]player, srv.MaxClients()), sentTo: make([]int, srv.MaxClients())}, nil
}

// toAll queues msg on the chat channel of every player.
func (g *serverGame) toAll(msg []byte) error {
	for i, p := range g.players {
		if !p.on {
			continue
		}
		if err := g.msg.Conn(i).Send(chChat, msg); err != nil {
			// A full queue is the game's to handle: here, a bot far
			// behind. Say so rather than drop a line.
			return fmt.Errorf("chat to slot %d: %w", i, err)
		}
		g.sentTo[i]++
	}
	return nil
}

func (g *serverGame) tick(now time.Time) error {
	if err := g.srv.Update(now); err != nil {
		return err
	}
	var err error
	g.srv.Poll(func(ev *engine.Event) {
		g.msg.Handle(ev)
		switch ev.Kind {
		case engine.EventConnect:
			g.players[ev.ClientIndex] = player{on: true, id: byte(ev.ClientID)}
			g.sentTo[ev.ClientIndex] = 0
			if e := g.toAll([]byte{'j', byte(ev.ClientID)}); e != nil && err == nil {
				err = e
			}
		case engine.EventDisconnect:
			g.players[ev.ClientIndex].on = false
		}
	})
	if err != nil {
		return err
	}
	for i := range g.players {
		p := &g.players[i]
		c := g.msg.Conn(i)
		if !p.on || c == nil {
			continue
		}
		for m, ok := c.Receive(chInput); ok; m, ok = c.Receive(chInput) {
			g.inputs.add(now, m)
			p.x += int16(int8(m[8]))
			p.y += int16(int8(m[9]))
		}
		for m, ok := c.Receive(chChat); ok; m, ok = c.Receive(chChat) {
			// A line: 'c', k (4), text. Relayed stamped: 'c', from, k,
			// stamp (8), text.
			out := g.buf[:0]
			out = append(out, 'c', p.id)
			out = append(out, m[1:5]...)
			out = binary.LittleEndian.AppendUint64(out, uint64(now.UnixNano()))
			out = append(out, m[5:]...)
			if e := g.toAll(out); e != nil {
				return e
			}
			g.relayed++
		}
	}
	// The world, to everyone.
	st := binary.LittleEndian.AppendUint64(g.buf[:0], uint64(now.UnixNano()))
	st = append(st, 0)
	for _, p := range g.players {
		if p.on {
			st = append(st, p.id, byte(p.x), byte(p.x>>8), byte(p.y), byte(p.y>>8))
			st[8]++
		}
	}
	for i, p := range g.players {
		if p.on {
			_ = g.msg.Conn(i).Send(chState, st) // a full state queue drops nothing that matters: sequenced
		}
	}
	g.msg.Flush(now)
	g.stalled = g.msg.Stalled(g.stalled[:0])
	for _, i := range g.stalled {
		_ = g.srv.DisconnectClient(i)
	}
	return nil
}
