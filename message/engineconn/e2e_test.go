package engineconn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/message"
)

var testKey = bytes.Repeat([]byte{0x3c}, 32)

// stream is one direction of one connection as the application sees it:
// what it sent and what arrived, checked as it arrives.
type stream struct {
	t        *testing.T
	name     string
	sent     [3]uint32
	blocks   int
	next     uint32 // next ordered message
	blkGot   int
	unord    map[uint32]bool
	unrel    map[uint32]bool
	received [3]int
}

var e2eBlockSizes = [...]int{1, 1000, 65536}

func newStream(t *testing.T, name string) *stream {
	return &stream{t: t, name: name, unord: map[uint32]bool{}, unrel: map[uint32]bool{}}
}

func blockData(k int) []byte {
	b := make([]byte, e2eBlockSizes[k%len(e2eBlockSizes)])
	for i := range b {
		b[i] = byte(k*31 + i*7 + i>>8)
	}
	b[0] = 'b'
	return b
}

// send queues this tick's messages on c; a full queue waits a tick.
func (s *stream) send(c *message.Conn, tick int) {
	var msg [12]byte
	for ch, n := range [3]int{3, 1, 1} {
		for range n {
			msg[0] = 'm'
			binary.LittleEndian.PutUint32(msg[1:], s.sent[ch])
			err := c.Send(ch, msg[:5+int(s.sent[ch]%7)])
			if errors.Is(err, message.ErrQueueFull) {
				break
			}
			if err != nil {
				s.t.Fatal(err)
			}
			s.sent[ch]++
		}
	}
	if tick%100 == 0 {
		if err := c.SendBlock(0, blockData(s.blocks)); err == nil {
			s.blocks++
		} else if !errors.Is(err, message.ErrBlockBusy) && !errors.Is(err, message.ErrQueueFull) {
			s.t.Fatal(err)
		}
	}
}

// receive reads out c and checks every message against what the peer's
// stream sent.
func (s *stream) receive(c *message.Conn) {
	for ch := range 3 {
		for m, ok := c.Receive(ch); ok; m, ok = c.Receive(ch) {
			if m[0] == 'b' {
				if want := blockData(s.blkGot); ch != 0 || !bytes.Equal(m, want) {
					s.t.Fatalf("%s: block %d: %d bytes on channel %d differ from the %d sent", s.name, s.blkGot, len(m), ch, len(want))
				}
				s.blkGot++
				continue
			}
			k := binary.LittleEndian.Uint32(m[1:])
			switch ch {
			case 0:
				if k != s.next {
					s.t.Fatalf("%s: ordered message %d; want %d", s.name, k, s.next)
				}
				s.next++
			case 1, 2:
				seen := map[int]map[uint32]bool{1: s.unord, 2: s.unrel}[ch]
				if seen[k] {
					s.t.Fatalf("%s: channel %d message %d twice", s.name, ch, k)
				}
				seen[k] = true
			}
			s.received[ch]++
		}
	}
}

// complete reports whether every reliable message and block sent has
// arrived.
func (s *stream) complete() bool {
	return s.received[0] == int(s.sent[0]) && s.received[1] == int(s.sent[1]) && s.blkGot == s.blocks
}

// TestEngineEndToEnd: four clients and a server with reliable endpoints
// and message channels over the engine and batchiotest's simulator (5%
// loss, 50 ms each way, 10 ms jitter, 2% duplicates, fake clock, ticks of
// 10 ms): 20 s of ordered, unordered and unreliable messages and blocks
// both ways all arrive (once, in order, byte-exact); then a client that
// stops is reported stalled by the server.
func TestEngineEndToEnd(t *testing.T) {
	const numClients = 4
	mcfg := message.DefaultConfig()
	mcfg.StallTimeout = 2 * time.Second
	w := newWorld(t, numClients, batchiotest.SimConfig{Latency: 50 * time.Millisecond, Jitter: 10 * time.Millisecond,
		Loss: 0.05, Duplicate: 0.02}, mcfg)
	srv, msrv, clients, mcl, slotOf := w.srv, w.msrv, w.clients, w.mcl, w.slotOf
	up, down := make([]*stream, numClients), make([]*stream, numClients)
	for k := range up {
		up[k], down[k] = newStream(t, fmt.Sprintf("client %d to server", k)), newStream(t, fmt.Sprintf("server to client %d", k))
	}
	handle := w.handle
	stopped := -1
	tick := 0
	sending := true
	step := func() {
		w.now = w.now.Add(time.Millisecond)
		now := w.now
		tickNow := now.Sub(time.Unix(1_800_000_000, 0))%(10*time.Millisecond) == 0
		for k, c := range clients {
			if k == stopped {
				continue
			}
			c.Update(now)
			mcl[k].Update(now)
			if conn := mcl[k].Conn(); c.State() == engine.Connected {
				down[k].receive(conn)
				if tickNow {
					if sending {
						up[k].send(conn, tick)
					}
					mcl[k].Flush(now)
				}
			}
		}
		if err := srv.Update(now); err != nil {
			t.Fatal(err)
		}
		srv.Poll(handle)
		for k, i := range slotOf {
			if conn := msrv.Conn(i); conn != nil {
				up[k].receive(conn)
				if tickNow && sending {
					down[k].send(conn, tick)
				}
			}
		}
		if tickNow {
			msrv.Flush(now)
			tick++
		}
	}
	w.connect(t)
	for range 20_000 {
		step()
	}
	sending = false
	done := func() bool {
		for k := range up {
			if !up[k].complete() || !down[k].complete() {
				return false
			}
		}
		return true
	}
	for i := 0; i < 20_000 && !done(); i++ {
		step()
	}
	for k := range up {
		for _, s := range [2]*stream{up[k], down[k]} {
			if !s.complete() {
				t.Fatalf("%s: ordered %d/%d, unordered %d/%d, blocks %d/%d received", s.name,
					s.received[0], s.sent[0], s.received[1], s.sent[1], s.blkGot, s.blocks)
			}
			if s.blkGot < 10 || s.received[0] < 4_000 {
				t.Errorf("%s: only %d blocks and %d ordered messages", s.name, s.blkGot, s.received[0])
			}
			if sent, got := int(s.sent[2]), s.received[2]; got < sent*85/100 {
				t.Errorf("%s: %d of %d unreliable messages arrived; want most", s.name, got, sent)
			}
		}
	}
	if r, s := msrv.Errors(); r != 0 || s != 0 {
		t.Errorf("server adapter: %d refused packets, %d failed sends", r, s)
	}
	// Client 0 stops: the server sees it stall within StallTimeout.
	stopped = 0
	stop := w.now
	var stalled []int
	for i := 0; i < 4000 && len(stalled) == 0; i++ {
		step()
		stalled = msrv.Stalled(stalled[:0])
	}
	if len(stalled) != 1 || stalled[0] != slotOf[0] {
		t.Fatalf("stalled slots %v 4 s after client 0 stopped; want [%d]", stalled, slotOf[0])
	}
	// StallTimeout counts from the first packet after the last ack, which
	// can be up to a round trip before or after the stop.
	if d := w.now.Sub(stop); d < mcfg.StallTimeout-150*time.Millisecond || d > mcfg.StallTimeout+200*time.Millisecond {
		t.Errorf("stall reported %v after the stop; want 1.85 s to 2.2 s", d)
	}
	st, _ := srv.ReliableStats(slotOf[1])
	t.Logf("server RTT estimate %.1f ms; conn stats %+v", st.RTT, msrv.Conn(slotOf[1]).Stats())
}
