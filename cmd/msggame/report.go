package main

import (
	"errors"
	"fmt"
	"time"
)

func report(o options, g *serverGame, bots []*bot, ran time.Duration) error {
	fmt.Printf("msggame: %d bots, %v at %.0f Hz; simulated loss %.0f%%, latency %v, jitter %v, duplicates %.0f%%\n",
		o.bots, ran.Round(time.Millisecond), o.tickHz, o.loss*100, o.latency, o.jitter, o.dup*100)
	var chat, state latencies
	var problems []string
	states, said := 0, 0
	for i, b := range bots {
		chat = append(chat, b.chat...)
		state = append(state, b.state...)
		states += b.states
		said += int(b.said)
		problems = append(problems, b.errs...)
		slot := b.c.ClientIndex()
		if !b.connected() {
			problems = append(problems, fmt.Sprintf("bot %d is not connected", i+1))
		} else if b.heard != g.sentTo[slot] {
			problems = append(problems, fmt.Sprintf("bot %d heard %d chat-channel messages; the server sent it %d", i+1, b.heard, g.sentTo[slot]))
		}
	}
	fmt.Printf("chat  (reliable-ordered): %d lines said, %d relayed to %d bots, every one heard once in order: %v\n",
		said, g.relayed, len(bots), len(problems) == 0)
	fmt.Printf("      relay latency p50 %v  p99 %v  max %v\n", chat.pct(0.5), chat.pct(0.99), chat.pct(1))
	fmt.Printf("state (unreliable, sequenced): %d received; latency p50 %v  p99 %v\n", states, state.pct(0.5), state.pct(0.99))
	fmt.Printf("input (unreliable): %d received by the server; latency p50 %v  p99 %v\n", len(g.inputs), g.inputs.pct(0.5), g.inputs.pct(0.99))
	for i := range g.players {
		if c := g.msg.Conn(i); c != nil {
			st := c.Stats()
			rs, _ := g.srv.ReliableStats(i)
			fmt.Printf("slot %d: RTT %.1f ms; messages sent %d, resent %d; packets %d written, %d read\n",
				i, rs.RTT, st.MessagesSent, st.MessagesResent, st.PacketsWritten, st.PacketsRead)
			break // one slot is enough to show
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Println("  ", p)
		}
		return errors.New("not every chat line arrived once and in order")
	}
	return nil
}
