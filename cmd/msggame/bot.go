package main

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/message/engineconn"
)

// latencies collects the delays of stamped messages.
type latencies []time.Duration

func (l *latencies) add(now time.Time, m []byte) {
	if len(m) >= 8 {
		*l = append(*l, now.Sub(time.Unix(0, int64(binary.LittleEndian.Uint64(m)))))
	}
}

func (l latencies) pct(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

type bot struct {
	id     int
	c      *engine.Client
	m      *engineconn.Client
	rng    *rand.Rand
	said   uint32
	heard  int // chat-channel messages received this connection
	lastK  map[byte]uint32
	errs   []string
	chat   latencies
	state  latencies
	states int
	buf    [64]byte
}

func newBot(o options, i int, key []byte, server netip.AddrPort, now time.Time) (*bot, error) {
	rcfg := engine.DefaultReliableConfig()
	sock, err := socket(o, uint64(100+i))
	if err != nil {
		return nil, err
	}
	c, err := engine.NewClient(engine.ClientConfig{Reliable: &rcfg, ReceiveQueueSize: 1 << 10}, sock)
	if err != nil {
		return nil, err
	}
	token, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: protocolID, PrivateKey: key, ClientID: uint64(i + 1),
		PublicAddresses: []netip.AddrPort{server}, ExpireSeconds: 30, TimeoutSeconds: 10, Now: now})
	if err != nil {
		return nil, err
	}
	if err := c.Connect(token, now); err != nil {
		return nil, err
	}
	m, err := engineconn.NewClient(c, channels(o.bots))
	if err != nil {
		return nil, err
	}
	return &bot{id: i + 1, c: c, m: m, rng: rand.New(rand.NewPCG(uint64(i), 3)), lastK: map[byte]uint32{}}, nil
}

func (b *bot) connected() bool { return b.c.State() == engine.Connected }

func (b *bot) close(now time.Time) {
	b.c.Disconnect(now)
	_ = b.c.Close()
}

func (b *bot) tick(now time.Time, chatting bool, chatEvery, tick time.Duration) {
	b.c.Update(now)
	b.m.Update(now)
	if !b.connected() {
		return
	}
	conn := b.m.Conn()
	for m, ok := conn.Receive(chState); ok; m, ok = conn.Receive(chState) {
		b.state.add(now, m)
		b.states++
	}
	for m, ok := conn.Receive(chChat); ok; m, ok = conn.Receive(chChat) {
		b.heard++
		if m[0] != 'c' {
			continue // a join event
		}
		from, k := m[1], binary.LittleEndian.Uint32(m[2:])
		if last, seen := b.lastK[from]; seen && k != last+1 {
			b.errs = append(b.errs, fmt.Sprintf("bot %d: line %d from bot %d after line %d", b.id, k, from, last))
		}
		b.lastK[from] = k
		b.chat.add(now, m[6:])
	}
	in := binary.LittleEndian.AppendUint64(b.buf[:0], uint64(now.UnixNano()))
	in = append(in, byte(b.rng.IntN(3)-1), byte(b.rng.IntN(3)-1))
	_ = conn.Send(chInput, in) // a full input queue: this tick's input is late anyway
	if chatting && b.rng.Float64() < float64(tick)/float64(chatEvery) {
		line := append(b.buf[:0], 'c')
		line = binary.LittleEndian.AppendUint32(line, b.said)
		line = fmt.Appendf(line, "hello from bot %d", b.id)
		if err := conn.Send(chChat, line); err == nil {
			b.said++
		}
	}
	b.m.Flush(now)
}
