package engine

import (
	"errors"
	"runtime"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// The default mode: each shard is a goroutine that reads the clock,
// applies the application's queued work, runs a pass, and parks on its conn
// when there is nothing to do.

// run is the shard goroutine, until the server stops it.
func (s *shard) run() {
	defer s.srv.wg.Done()
	if s.lock {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	for !s.closing.Load() {
		now := s.cfg.Clock()
		s.loops++
		in := s.stats.PacketsIn
		s.pushed, s.outWork = false, false
		s.drainOutbox(now)
		s.pass(now)
		if s.pushed {
			s.srv.signal()
		}
		// Publish after every pass: once per batch (or per idle timer
		// wake), so Stats is never more than one batch old.
		s.publish()
		if s.stats.PacketsIn != in || s.outWork {
			if s.pushed {
				// The application goroutine may share this P (GOMAXPROCS
				// = shards is common, 1 in netbench's server): without a
				// turn it would wait for the socket to run dry, which a
				// flood never lets happen, or for preemption, and replies
				// would wait with it.
				runtime.Gosched()
			}
			continue
		}
		// Nothing came in and nothing was queued: park until a datagram,
		// the next timer scan or a Wake from the application. The deadline
		// is real time whatever the clock: a fake clock still gets prompt
		// passes.
		s.parked.Store(true)
		if _, ok := s.outbox.Front(); ok {
			s.parked.Store(false)
			continue
		}
		s.parks++
		err := s.conn.WaitRead(time.Now().Add(timerScanInterval))
		s.parked.Store(false)
		if errors.Is(err, batchio.ErrClosed) {
			break
		}
	}
	s.stop(s.cfg.Clock())
	s.srv.signal()
	s.publish()
}

// queue puts work for the shard in its outbox and wakes the shard if it is
// parked. Application goroutine only.
func (s *shard) queue(kind outboxKind, client int32, gen uint32, payload []byte) error {
	k := chunks(len(payload))
	if _, ok := s.outbox.ReserveAt(k - 1); !ok {
		s.sendQueueFull.Add(1)
		return ErrSendQueueFull
	}
	for c := 1; c < k; c++ {
		e, _ := s.outbox.ReserveAt(c)
		copy(e.data[:], payload[c*codec.MaxPayloadBytes:])
	}
	e, _ := s.outbox.ReserveAt(0)
	e.kind, e.client, e.gen = kind, client, gen
	e.n = int32(len(payload))
	copy(e.data[:], payload)
	s.outbox.CommitN(k)
	if s.parked.Load() && s.waker != nil {
		s.waker.Wake()
	}
	return nil
}

// drainOutbox applies the application's queued work.
func (s *shard) drainOutbox(now time.Time) {
	s.setNow(now)
	for range s.outbox.Cap() {
		e, ok := s.outbox.Front()
		if !ok {
			return
		}
		s.outWork = true
		payload, k := readRecord(s.outbox, e.data[:], int(e.n), s.gather, outboxData)
		switch e.kind {
		case outSend, outDisconnect:
			i := int(e.client)
			// The slot is read only if this shard owns it; gen tells an old
			// connection's work from the current one's.
			switch {
			case !s.owns(i) || s.slots[i].gen != e.gen:
				s.staleSends++
			case e.kind == outSend && payload != nil:
				s.send(i, payload)
			default:
				s.kick(i)
			}
		case outBroadcast:
			s.broadcast(payload)
		case outDisconnectAll:
			s.kickAll()
		}
		s.outbox.ReleaseN(k)
	}
}

// publish copies the shard's counters where Stats can read them. It never
// waits: if a reader holds the lock, this pass's numbers are skipped and
// the next pass publishes.
func (s *shard) publish() {
	s.lastPass.Store(time.Now().UnixNano())
	if !s.statsMu.TryLock() {
		return
	}
	s.snapshot = s.stats
	s.snapshot.StaleSends = s.staleSends
	s.snapshot.Loops, s.snapshot.Parks = s.loops, s.parks
	s.snapshot.Connected = s.active.n
	if s.sockStats != nil {
		ms := s.sockStats.Stats()
		s.snapshot.RecvCalls, s.snapshot.RecvPackets = ms.RecvCalls, ms.RecvPackets
		s.snapshot.SendCalls, s.snapshot.SendPackets = ms.SendCalls, ms.SendPackets
	}
	s.statsMu.Unlock()
}
