//go:build linux

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/bench"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/message"
	"github.com/netcode-go/netcode/message/engineconn"
)

// -mode messages: clients send reliable-ordered messages of -size bytes
// at -rate per second each, and an unreliable stream of one -input-size
// message a tick, to a manual-mode server with reliable endpoints and
// message channels, all in this process over UDP on the loopback, a
// packet each way every tick (-tick). It reports each channel's delivery
// latency percentiles (send to the server's Receive), throughput, and
// messages per CPU-second of the whole process (both ends), and checks
// that every reliable message arrived once and in order.

const (
	msgChReliable   = 0
	msgChUnreliable = 1
	maxMessageBench = 1024 // clients: one goroutine drives them all
	msgStampBytes   = 12   // send time (8), sequence (4)
)

func checkMessagesMode(o *options) error {
	switch {
	case o.serve != "" || o.target != "":
		return errors.New("-mode messages runs its server in process: no -serve or -target")
	case o.sweep || o.bare:
		return errors.New("-mode messages has no -sweep or -bare")
	case o.clients > maxMessageBench:
		return fmt.Errorf("-clients %d: -mode messages drives at most %d", o.clients, maxMessageBench)
	case o.size > engineconn.MaxPacketBudget-32 || o.inputSize > engineconn.MaxPacketBudget-32:
		return fmt.Errorf("-size %d, -input-size %d: -mode messages takes at most %d", o.size, o.inputSize, engineconn.MaxPacketBudget-32)
	}
	return nil
}

func messagesConfig(o *options) message.Config {
	q := min(max(256, int(o.rate)/2), 1<<14) // half a second of sends, at least 256
	return message.Config{
		PacketBudget: engineconn.MaxPacketBudget,
		Channels: []message.ChannelConfig{
			msgChReliable:   {Kind: message.ReliableOrdered, Priority: 1, MaxMessageSize: o.size, SendQueueSize: q, ReceiveQueueSize: q},
			msgChUnreliable: {Kind: message.Unreliable, Priority: 0, MaxMessageSize: o.inputSize, SendQueueSize: 4, ReceiveQueueSize: 64},
		},
	}
}

type msgBenchClient struct {
	c       *engine.Client
	m       *engineconn.Client
	sent    [2]uint32
	credit  float64 // reliable sends owed
	blocked uint64  // sends refused with ErrQueueFull (tried again)
}

type msgChannelStats struct {
	hist       *hdrhistogram.Histogram
	delivered  uint64
	bytes      uint64
	outOfOrder uint64
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runMessages(o *options) error {
	if err := checkMessagesMode(o); err != nil {
		return err
	}
	rcfg := engine.DefaultReliableConfig()
	rcfg.FragmentAbove = engineconn.MaxPacketBudget // one datagram a packet
	rcfg.FragmentSize = engineconn.MaxPacketBudget - 16
	host := "127.0.0.1"
	if o.ipv6 {
		host = "::1"
	}
	srv, err := engine.Listen(engine.ServerConfig{ProtocolID: o.protocolID, PrivateKey: o.key, MaxClients: o.clients,
		Manual: true, Reliable: &rcfg, EventQueueSize: 1 << 16}, batchio.Config{RecvBuffer: 8 << 20, SendBuffer: 8 << 20},
		netip.AddrPortFrom(netip.MustParseAddr(host), 0))
	if err != nil {
		return err
	}
	defer srv.Close()
	mcfg := messagesConfig(o)
	now := time.Now()
	msrv, err := engineconn.NewServer(srv, mcfg, now)
	if err != nil {
		return err
	}
	clients := make([]*msgBenchClient, o.clients)
	for i := range clients {
		c, err := engine.DialClient(engine.ClientConfig{Reliable: &rcfg, ReceiveQueueSize: 256})
		if err != nil {
			return err
		}
		defer c.Close()
		token, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: o.protocolID, PrivateKey: o.key, ClientID: uint64(i + 1),
			PublicAddresses: srv.PublicAddresses(), ExpireSeconds: 30, TimeoutSeconds: 10, Now: now})
		if err != nil {
			return err
		}
		if err := c.Connect(token, now); err != nil {
			return err
		}
		m, err := engineconn.NewClient(c, mcfg)
		if err != nil {
			return err
		}
		clients[i] = &msgBenchClient{c: c, m: m}
	}
	var st [2]msgChannelStats
	for k := range st {
		st[k].hist = bench.NewHistogram()
	}
	next := make([]uint32, o.clients+1) // next reliable sequence per client id
	slotID := make([]int, o.clients)    // slot -> client id
	handle := func(ev *engine.Event) {
		msrv.Handle(ev)
		if ev.Kind == engine.EventConnect {
			slotID[ev.ClientIndex] = int(ev.ClientID)
		}
	}
	tick := time.Duration(float64(time.Second) / o.tickHz)
	msg := make([]byte, max(o.size, o.inputSize))
	var start time.Time
	var cpu0 time.Duration
	measuring, sending := false, true
	connectBy := now.Add(o.connect)
	var end time.Time
	for t := now; ; t = t.Add(tick) {
		time.Sleep(time.Until(t))
		now = time.Now()
		if !measuring && srv.NumConnectedClients() == o.clients {
			measuring, start, cpu0 = true, now, cpuTime()
			end = start.Add(o.duration)
			if !o.quiet {
				fmt.Fprintf(os.Stderr, "netbench: %d clients connected; measuring for %v\n", o.clients, o.duration)
			}
		}
		if !measuring && now.After(connectBy) {
			return fmt.Errorf("%d of %d clients connected within -connect-timeout %v", srv.NumConnectedClients(), o.clients, o.connect)
		}
		if measuring && sending && !now.Before(end) {
			sending = false
			end = now
		}
		for _, cl := range clients {
			cl.c.Update(now)
			cl.m.Update(now)
			if !measuring || cl.c.State() != engine.Connected {
				continue
			}
			conn := cl.m.Conn()
			if sending {
				cl.credit += o.rate / o.tickHz
				for ; cl.credit >= 1; cl.credit-- {
					stamp(msg[:o.size], cl.sent[0])
					if err := conn.Send(msgChReliable, msg[:o.size]); err != nil {
						cl.blocked++ // the window is full: the send waits
						break
					}
					cl.sent[0]++
				}
				stamp(msg[:o.inputSize], cl.sent[1])
				if conn.Send(msgChUnreliable, msg[:o.inputSize]) == nil {
					cl.sent[1]++
				}
			}
			cl.m.Flush(now)
		}
		if err := srv.Update(now); err != nil {
			return err
		}
		srv.Poll(handle)
		recvAt := time.Now()
		for slot, id := range slotID {
			conn := msrv.Conn(slot)
			if conn == nil {
				continue
			}
			for ch := range st {
				for m, ok := conn.Receive(ch); ok; m, ok = conn.Receive(ch) {
					sentAt := time.Unix(0, int64(binary.LittleEndian.Uint64(m)))
					bench.RecordLatency(st[ch].hist, recvAt.Sub(sentAt))
					st[ch].delivered++
					st[ch].bytes += uint64(len(m))
					if seq := binary.LittleEndian.Uint32(m[8:]); ch == msgChReliable {
						if seq != next[id] {
							st[ch].outOfOrder++
						}
						next[id] = seq + 1
					}
				}
			}
		}
		msrv.Flush(now)
		if measuring && !sending && (allDelivered(clients, st[0].delivered) || now.Sub(end) > 10*time.Second) {
			break
		}
	}
	cpu := cpuTime() - cpu0
	return reportMessages(o, clients, st, end.Sub(start), cpu, msrv)
}

// stamp writes the time (now, not the tick's: ends in one process share
// ticks) and the sequence at the start of m.
func stamp(m []byte, seq uint32) {
	binary.LittleEndian.PutUint64(m, uint64(time.Now().UnixNano()))
	binary.LittleEndian.PutUint32(m[8:], seq)
}

func allDelivered(clients []*msgBenchClient, delivered uint64) bool {
	var sent uint64
	for _, c := range clients {
		sent += uint64(c.sent[0])
	}
	return delivered == sent
}

func reportMessages(o *options, clients []*msgBenchClient, st [2]msgChannelStats, ran, cpu time.Duration, msrv *engineconn.Server) error {
	var sent [2]uint64
	var blocked uint64
	for _, c := range clients {
		sent[0] += uint64(c.sent[0])
		sent[1] += uint64(c.sent[1])
		blocked += c.blocked
	}
	fmt.Printf("messages: %d clients, %v, %.0f Hz packets, reliable-ordered %d B at %.0f/s each, unreliable %d B a tick\n",
		o.clients, ran.Round(time.Millisecond), o.tickHz, o.size, o.rate, o.inputSize)
	for ch, name := range [2]string{"reliable-ordered", "unreliable"} {
		p := bench.PercentilesOf(st[ch].hist)
		fmt.Printf("  %-16s sent %9d delivered %9d (%.2f%%)  %10.0f msgs/s %7.2f MB/s  latency ms p50 %.2f p90 %.2f p99 %.2f p99.9 %.2f max %.2f\n",
			name, sent[ch], st[ch].delivered, 100*float64(st[ch].delivered)/float64(max(sent[ch], 1)),
			float64(st[ch].delivered)/ran.Seconds(), float64(st[ch].bytes)/ran.Seconds()/1e6,
			p.P50/1e3, p.P90/1e3, p.P99/1e3, p.P999/1e3, p.Max/1e3)
	}
	// Offered more than this, the reliable channel queues (its latency
	// grows; Send waits for the window), the unreliable one does not.
	fmt.Printf("  capacity: a packet of %d bytes a tick, %.0f kB/s per client each way\n",
		engineconn.MaxPacketBudget, float64(engineconn.MaxPacketBudget)*o.tickHz/1e3)
	total := st[0].delivered + st[1].delivered
	fmt.Printf("  process CPU %v (both ends): %.0f messages per CPU-second; reliable sends that waited for the window: %d\n",
		cpu.Round(time.Millisecond), float64(total)/cpu.Seconds(), blocked)
	if r, s := msrv.Errors(); r != 0 || s != 0 {
		fmt.Printf("  server adapter: %d packets refused, %d sends failed\n", r, s)
	}
	if st[0].outOfOrder != 0 || st[0].delivered != sent[0] {
		return fmt.Errorf("reliable-ordered: %d of %d delivered, %d out of order", st[0].delivered, sent[0], st[0].outOfOrder)
	}
	return nil
}
