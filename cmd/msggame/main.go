// Command msggame is a tiny game over netcode with message channels: a
// server and bot clients in one process, over UDP on the loopback. Bots
// walk about, sending inputs on an unreliable channel; the server sends
// each the world's state every tick on a sequenced unreliable channel;
// bots chat on a reliable-ordered channel and the server relays every
// line to every bot, with join events on the same channel. At the end it
// checks every chat line reached every bot once and in order, and prints
// latency percentiles per channel.
//
//	go run ./cmd/msggame                         # 8 bots, 10 s, 30 Hz
//	go run ./cmd/msggame -bots 32 -loss 0.05 -latency 40ms -jitter 10ms
//
// -loss, -latency, -jitter and -dup put batchiotest's simulator in front
// of every socket (both ways), on the real clock.
package main

import (
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/message"
)

const protocolID = 0x6d736767616d65 // "msggame"

// The channels, the same on both sides.
const (
	chChat  = 0 // reliable-ordered: chat lines and join events
	chState = 1 // unreliable, sequenced: the world, server to bots
	chInput = 2 // unreliable: a bot's moves, bot to server
)

func channels(bots int) message.Config {
	return message.Config{Channels: []message.ChannelConfig{
		chChat:  {Kind: message.ReliableOrdered, Priority: 1, MaxMessageSize: 128, SendQueueSize: 1024, ReceiveQueueSize: 1024},
		chState: {Kind: message.Unreliable, Sequenced: true, MaxMessageSize: stateBytes(bots), SendQueueSize: 4, ReceiveQueueSize: 4},
		chInput: {Kind: message.Unreliable, MaxMessageSize: inputBytes, SendQueueSize: 8, ReceiveQueueSize: 64},
	}}
}

type options struct {
	bots            int
	duration        time.Duration
	tickHz          float64
	loss, dup       float64
	latency, jitter time.Duration
	chatEvery       time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.bots, "bots", 8, "bot clients (1 to 64)")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long the bots play")
	flag.Float64Var(&o.tickHz, "tick", 30, "ticks per second, server and bots")
	flag.Float64Var(&o.loss, "loss", 0, "simulated loss per datagram, each way (0 to 0.5)")
	flag.Float64Var(&o.dup, "dup", 0, "simulated duplicates per datagram")
	flag.DurationVar(&o.latency, "latency", 0, "simulated one-way latency")
	flag.DurationVar(&o.jitter, "jitter", 0, "simulated jitter (reorders)")
	flag.DurationVar(&o.chatEvery, "chat", time.Second, "how often each bot says something, on average")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "msggame:", err)
		os.Exit(1)
	}
}

func (o options) check() error {
	switch {
	case o.bots < 1 || o.bots > maxBots:
		return fmt.Errorf("-bots %d; want 1 to %d", o.bots, maxBots)
	case o.tickHz < 1 || o.tickHz > 240:
		return fmt.Errorf("-tick %v; want 1 to 240", o.tickHz)
	case o.loss < 0 || o.loss > 0.5 || o.dup < 0 || o.dup > 0.5:
		return fmt.Errorf("-loss %v, -dup %v; want 0 to 0.5", o.loss, o.dup)
	case o.duration <= 0 || o.chatEvery <= 0 || o.latency < 0 || o.jitter < 0:
		return errors.New("-duration and -chat must be positive, -latency and -jitter not negative")
	}
	return nil
}

// socket opens a UDP socket on the loopback, behind the simulator when
// one is asked for.
func socket(o options, seed uint64) (batchio.Conn, error) {
	c, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{RecvBuffer: 1 << 20, SendBuffer: 1 << 20})
	if err != nil || (o.loss == 0 && o.dup == 0 && o.latency == 0 && o.jitter == 0) {
		return c, err
	}
	return batchiotest.NewSimConn(c, batchiotest.SimConfig{Loss: o.loss, Duplicate: o.dup, Latency: o.latency,
		Jitter: o.jitter, Seed: seed, MaxQueued: 1 << 16}, time.Now)
}

func run(o options) error {
	if err := o.check(); err != nil {
		return err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	rcfg := engine.DefaultReliableConfig()
	sconn, err := socket(o, 1)
	if err != nil {
		return err
	}
	srv, err := engine.NewServer(engine.ServerConfig{ProtocolID: protocolID, PrivateKey: key, MaxClients: o.bots,
		Manual: true, Reliable: &rcfg, PublicAddresses: []netip.AddrPort{sconn.LocalAddr()}}, sconn)
	if err != nil {
		return err
	}
	defer srv.Close()
	now := time.Now()
	g, err := newServerGame(srv, channels(o.bots), now)
	if err != nil {
		return err
	}
	bots := make([]*bot, o.bots)
	for i := range bots {
		if bots[i], err = newBot(o, i, key, sconn.LocalAddr(), now); err != nil {
			return err
		}
		defer bots[i].close(time.Now())
	}
	tick := time.Duration(float64(time.Second) / o.tickHz)
	start := now
	quietAt := start.Add(o.duration)
	for next := start; ; next = next.Add(tick) {
		time.Sleep(time.Until(next))
		now = time.Now()
		chatting := now.Before(quietAt)
		for _, b := range bots {
			b.tick(now, chatting, o.chatEvery, tick)
		}
		if err := g.tick(now); err != nil {
			return err
		}
		if !chatting && (allHeard(g, bots) || now.Sub(quietAt) > 10*time.Second) {
			break
		}
	}
	return report(o, g, bots, now.Sub(start))
}

func allHeard(g *serverGame, bots []*bot) bool {
	for _, b := range bots {
		if !b.connected() || b.heard < g.sentTo[b.c.ClientIndex()] {
			return false
		}
	}
	return true
}
