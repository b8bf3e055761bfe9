package engine

import (
	"fmt"
	"net/netip"
	"sync"
)

// admission is the server state that must be global when several shards
// serve one set of client slots: which client ids are connected, which
// connect tokens were used from which address, and which slots are free.
// Only the handshake path (connection requests and responses, slot resets)
// touches it, under one mutex; payload, keep-alive and disconnect packets
// never do. A single Server has its own, uncontended.
type admission struct {
	mu     sync.Mutex
	byID   oaTable[uint64] // client id -> slot
	tokens tokenTable
	slots  partition // connected slots first, then free ones
}

func newAdmission(maxClients, tokenTableSize int) *admission {
	a := &admission{}
	a.byID.init(maxClients, newIDHash())
	a.tokens.init(tokenTableSize)
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

// useToken records the token as used from addr and reports whether that is
// allowed: a token already used from another address is refused.
func (a *admission) useToken(mac tokenMAC, from netip.AddrPort) bool {
	a.mu.Lock()
	ok := a.tokens.findOrAdd(mac, from)
	a.mu.Unlock()
	return ok
}

// full reports whether every slot is taken.
func (a *admission) full() bool {
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
)

// claim takes a free slot for client id, checking in the standard's order
// that the id is not connected and that the server is not full. Doing both
// under one lock is what lets two shards race for the same id or the last
// slot and admit at most one.
func (a *admission) claim(id uint64) (int32, claimResult) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.byID.get(id); ok {
		return -1, claimIDConnected
	}
	if a.slots.full() {
		return -1, claimFull
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

// clearTokens forgets every used token (the server stopped).
func (a *admission) clearTokens() {
	a.mu.Lock()
	a.tokens.clear()
	a.mu.Unlock()
}
