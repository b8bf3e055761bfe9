package engine

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
)

// admission is the server state that must be global when several shards
// serve one set of client slots: which client ids are connected, the
// connect-token history, and which slots are free. Only the handshake path
// (connection requests and responses, slot resets) touches it, under one
// mutex; payload, keep-alive and disconnect packets never do. A single
// Server has its own, uncontended.
type admission struct {
	// draining: the server admits no one (Drain); requests and responses
	// are answered as a full server answers them.
	draining atomic.Bool
	mu       sync.Mutex
	byID     oaTable[uint64] // client id -> slot
	history  tokenHistory
	slots    partition // connected slots first, then free ones
}

func newAdmission(maxClients, historySize int) *admission {
	a := &admission{}
	a.byID.init(maxClients, newIDHash())
	a.history.init(historySize)
	a.slots.init(maxClients)
	return a
}

// idConnected reports whether a client with this id holds a slot.
func (a *admission) idConnected(id uint64) bool {
	a.mu.Lock()
	_, ok := a.byID.get(id)
	a.mu.Unlock()
	return ok
}

// presentToken looks the token of client id up in the history and makes it
// pending for from if it is new (tokenHistory.present).
func (a *admission) presentToken(mac tokenMAC, from netip.AddrPort, id, expire, now uint64) (int32, historyResult) {
	a.mu.Lock()
	i, r := a.history.present(mac, from, id, expire, now)
	a.mu.Unlock()
	return i, r
}

// sweepHistory frees a share of the history's expired entries, so that its
// counts stay current and new tokens rarely wait for a full sweep: with a
// timer scan every 10 ms it passes over the whole history at least about
// once a second.
func (a *admission) sweepHistory(now uint64) {
	a.mu.Lock()
	a.history.sweep(now, max(a.history.size()/100, historySweepMin))
	a.mu.Unlock()
}

// historySweepMin is the least a timer scan sweeps: small histories are
// swept whole every time.
const historySweepMin = 256

// full reports whether every slot is taken, or the server is draining.
func (a *admission) full() bool {
	if a.draining.Load() {
		return true
	}
	a.mu.Lock()
	f := a.slots.full()
	a.mu.Unlock()
	return f
}

// connected returns the number of taken slots.
func (a *admission) connected() int {
	a.mu.Lock()
	n := a.slots.n
	a.mu.Unlock()
	return n
}

type claimResult uint8

const (
	claimOK claimResult = iota
	claimIDConnected
	claimFull
	claimTokenConsumed
)

// claim takes a free slot for client id and consumes the handshake's
// history entry, checking in the standard's order that the id is not
// connected and that the server is not full, then that the entry still
// holds the pending token. Doing it all under one lock is what lets two
// shards race for the same id, token or last slot and admit at most one.
func (a *admission) claim(id uint64, entry int32, mac tokenMAC, now uint64) (int32, claimResult) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.byID.get(id); ok {
		return -1, claimIDConnected
	}
	if a.slots.full() || a.draining.Load() {
		return -1, claimFull
	}
	if !a.history.consume(entry, mac, now) {
		return -1, claimTokenConsumed
	}
	i := a.slots.takeAny()
	a.byID.put(id, int32(i))
	return int32(i), claimOK
}

// claimIndex takes slot i for client id (loopback clients choose their slot).
func (a *admission) claimIndex(i int, id uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.slots.pos[i] < int32(a.slots.n) {
		return fmt.Errorf("%w: %d", ErrSlotInUse, i)
	}
	if _, ok := a.byID.get(id); ok {
		return fmt.Errorf("%w: %d", ErrClientIDInUse, id)
	}
	a.slots.take(i)
	a.byID.put(id, int32(i))
	return nil
}

// release frees slot i held by client id.
func (a *admission) release(i int, id uint64) {
	a.mu.Lock()
	if j, ok := a.byID.get(id); ok && int(j) == i {
		a.byID.del(id)
	}
	if a.slots.pos[i] < int32(a.slots.n) {
		a.slots.release(i)
	}
	a.mu.Unlock()
}
