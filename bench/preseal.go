//go:build linux

package bench

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

// Sealing ahead. A load whose clients seal every input as they send it
// pays one AEAD seal per datagram, as the server does to open it: on a
// two-core machine the load then runs out of core before the server does.
// With LoadConfig.PresealLimit set, BeginWindow has each shared-socket
// worker seal, before the window starts, every payload its connected
// clients will send in it (engine.Client.SealNext, sequences reserved so
// that nothing else takes them); in the window a send is a copy into the
// next sendmmsg. The payloads are the same stamped payloads, with one
// difference: the stamp holds the send time the schedule gave the payload,
// not the time it went out, so an echo's round trip also counts any delay
// of the load's in sending it (it never hides one).

// DefaultPresealLimit is netbench's default LoadConfig.PresealLimit.
const DefaultPresealLimit = 512 << 20

const (
	// presealGapMargin is how many sequences a client keeps below its
	// sealed block beyond one for each keep-alive interval until its first
	// send in the window (presealGap).
	presealGapMargin = 16
	// maxPresealGap is the most engine.Client.ReserveSequences allows.
	maxPresealGap = 1024
	// presealWait bounds BeginWindow's wait for the workers to seal.
	presealWait = time.Minute
	// presealSlot is the room of one sealed payload packet beyond the
	// payload: prefix, sequence (up to 8 bytes) and tag.
	presealSlot = 1 + 8 + codec.MACBytes
	// presealReadEvery is how long a worker seals before it reads what
	// has arrived.
	presealReadEvery = time.Millisecond
)

// ErrPresealLate is returned by BeginWindow when sealing the window's
// payloads ended after the window's start: give it more lead
// (Load.PresealLead).
var ErrPresealLate = errors.New("bench: the window's payloads were sealed after its start")

// sealRequest asks the workers to seal a window's payloads.
type sealRequest struct {
	id       uint64 // counts requests: a retry has the same gen
	gen      uint64 // the window's Load.gen
	start    time.Time
	end      time.Time
	interval time.Duration
	wg       sync.WaitGroup
}

// sealBlock is one client's sealed payloads for a window: packet k in
// buf[i*slot:][:lens[i]] with i = k*stride + col, stamped as sent at the
// schedule's k-th send. A worker's arena holds its clients' packets in
// send order (the k-th of every client, then the k+1-th), so the window's
// sends walk it from start to end instead of jumping from client to
// client, each jump a cache miss.
type sealBlock struct {
	gen    uint64 // the window's Load.gen; sealed for no other
	buf    []byte // its worker's arena
	lens   []uint16
	slot   int
	stride int // the arena's columns: the worker's clients sealed ahead
	col    int
	via    *muxConn // the client's view of its worker: sends go to its batch
	count  int      // how many packets it holds
	seq0   uint64   // the stamp sequence of packet 0
	k      int      // the next packet to send
}

// index is where packet k is in the arena.
func (b *sealBlock) index(k int) int { return k*b.stride + b.col }

// presealing reports whether a window at rateHz lasting d is sealed
// ahead.
func (l *Load) presealing(rateHz float64, d time.Duration) bool {
	return l.cfg.PresealLimit > 0 && len(l.workers) > 0 && !l.cfg.Bare && l.cfg.Reliable == nil &&
		l.cfg.Mode != LoadHandshake && rateHz > 0 && d > 0
}

// presealCount is the most payloads one client sends in a window at
// rateHz lasting d.
func presealCount(rateHz float64, d time.Duration) int64 {
	return int64(d.Seconds()*rateHz) + 1
}

// PresealBytes returns the memory the sealed payloads of a window at
// rateHz lasting d take (0 when the window is not sealed ahead): the
// bound LoadConfig.PresealLimit is checked against.
func (l *Load) PresealBytes(rateHz float64, d time.Duration) int64 {
	if !l.presealing(rateHz, d) {
		return 0
	}
	per := presealCount(rateHz, d) * int64(l.cfg.PayloadBytes+presealSlot+2)
	return int64(l.Active()) * per
}

// PresealLead returns how long before a window at rateHz lasting d its
// start should be to leave time to seal its payloads, from how fast the
// last sealing went (0 when nothing is sealed ahead).
func (l *Load) PresealLead(rateHz float64, d time.Duration) time.Duration {
	if !l.presealing(rateHz, d) {
		return 0
	}
	ns := l.sealNs.Load()
	if ns == 0 {
		ns = 4000 // a first guess, well above a seal's cost
	}
	per := time.Duration(presealCount(rateHz, d) * int64(l.Active()) * ns / int64(max(len(l.workers), 1)))
	return 2*per + 50*time.Millisecond
}

// preseal has the workers seal the window's payloads and waits for them.
func (l *Load) preseal(rateHz float64, start time.Time, d time.Duration) error {
	if need := l.PresealBytes(rateHz, d); need > l.cfg.PresealLimit {
		return fmt.Errorf("bench: sealing a window of %v at %g Hz ahead for %d clients takes %d MiB, over the limit of %d MiB (LoadConfig.PresealLimit, netbench -preseal-limit); shorten the window, raise the limit or set it to 0 to seal while sending",
			d, rateHz, l.Active(), (need+1<<20-1)>>20, l.cfg.PresealLimit>>20)
	}
	iv := max(time.Duration(float64(time.Second)/rateHz), 1)
	r := &sealRequest{id: l.sealIDs.Add(1), gen: l.gen.Load() + 1, start: start, end: start.Add(d), interval: iv}
	r.wg.Add(len(l.workers))
	t0 := time.Now()
	l.sealReq.Store(r)
	for _, w := range l.workers {
		w.wake()
	}
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(presealWait):
		return fmt.Errorf("bench: sealing a window's payloads took over %v", presealWait)
	}
	if n := presealCount(rateHz, d) * int64(l.Active()); n > 0 {
		l.sealNs.Store(int64(time.Since(t0)) * int64(len(l.workers)) / n)
	}
	if time.Now().After(start) {
		return fmt.Errorf("%w (%v late)", ErrPresealLate, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// preseal seals request r's payloads for the worker's connected active
// clients, into an arena reused from window to window. Clients that are
// not connected send their payloads sealed as they go.
func (w *muxWorker) preseal(r *sealRequest) {
	defer r.wg.Done()
	l := w.l
	as := l.active.Load()
	slot := l.cfg.PayloadBytes + presealSlot
	rows, cols := 0, 0
	for _, c := range w.clients {
		c.seal = sealBlock{gen: r.gen, slot: slot}
		if c.eng != nil && c.up && c.idx < as.n {
			rows = max(rows, w.sealCount(c, r))
			cols++
		}
	}
	if total := rows * cols; total*slot > cap(w.sealBuf) {
		w.sealBuf = make([]byte, total*slot)
		w.sealLens = make([]uint16, total)
	}
	buf, lens := w.sealBuf[:rows*cols*slot], w.sealLens[:rows*cols]
	read := time.Now()
	col := 0
	for _, c := range w.clients {
		if c.eng == nil || !c.up || c.idx >= as.n {
			continue
		}
		if time.Since(read) >= presealReadEvery {
			// Sealing a large window takes a good part of a second:
			// the replies meanwhile would overflow the receive path
			// and arrive stale in the window.
			w.receive()
			w.flush()
			read = time.Now()
		}
		b := &c.seal
		b.buf, b.lens, b.stride, b.col, b.via = buf, lens, cols, col, w.views[c.kslot]
		col++
		n := w.sealCount(c, r)
		next := w.firstSend(c, r)
		gap, ok := presealGap(time.Until(next))
		if n == 0 || !ok || c.eng.ReserveSequences(gap, n) != nil {
			continue
		}
		b.seq0 = c.seq
		for k := range n {
			PutStamp(c.pay, int64(next.Sub(l.start)), c.seq+uint64(k))
			i := b.index(k)
			m, err := c.eng.SealNext(buf[i*slot:(i+1)*slot], c.pay)
			if err != nil {
				break
			}
			lens[i] = uint16(m)
			b.count = k + 1
			next = next.Add(r.interval)
		}
	}
}

// presealGap is how many sequences a client should keep below its sealed
// block when its first sealed packet goes out wait from now: one for each
// keep-alive it may send until then, and a margin. The client's counter
// jumps over a block it reaches, so the block's packets would then arrive
// older than the newest the server has seen, and it drops those more than
// its replay window (256) older. ok is false when the wait is too long to
// keep below the block: that client seals as it sends.
func presealGap(wait time.Duration) (gap int, ok bool) {
	gap = int(max(wait, 0)/engine.PacketSendInterval) + 1 + presealGapMargin
	return gap, gap <= maxPresealGap
}

// firstSend is client c's first send time in r's window, as Load.tick
// schedules it.
func (w *muxWorker) firstSend(c *loadClient, r *sealRequest) time.Time {
	return r.start.Add(w.l.phase(c, r.interval))
}

// sealCount is how many payloads client c sends in r's window.
func (w *muxWorker) sealCount(c *loadClient, r *sealRequest) int {
	first := w.firstSend(c, r)
	if !first.Before(r.end) {
		return 0
	}
	return int((r.end.Sub(first) + r.interval - 1) / r.interval)
}

// sendSealed sends client c's next sealed payload, the k-th of its
// window; ok is false when it has none (not sealed, or past its block)
// and the caller seals one as it goes.
func (c *loadClient) sendSealed(gen uint64) (sent, ok bool) {
	b := &c.seal
	if b.gen != gen || b.k >= b.count {
		return false, false
	}
	i := b.index(b.k)
	b.k++
	// Straight into the worker's batch: through the engine client it
	// would be copied into the client's own batch first, a cold one.
	p := b.buf[i*b.slot:][:b.lens[i]]
	if c.eng.SentSealed(p) != nil {
		return false, true
	}
	b.via.w.queuePacket(p, c.eng.ServerAddress(), b.via.local.Addr())
	c.seq = b.seq0 + uint64(b.k)
	return true, true
}
