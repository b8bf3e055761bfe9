package engine

import (
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/netcode-go/netcode/codec"
)

// tokenMAC identifies a connect token: the tag of its encrypted private
// part. Only the web backend can make a valid one, and it differs for every
// token.
type tokenMAC = [codec.MACBytes]byte

// tokenTable remembers which source address first used each connect token,
// so that a token copied by an eavesdropper cannot be used from another
// address while the rightful client may resend it (it repeats requests at
// 10 Hz). Like the reference it is bounded and forgets the oldest token when
// full; unlike the reference's linear scan it is O(1): entries sit in a FIFO
// ring in arrival order (the oldest is at head) and a hash index finds a tag.
type tokenTable struct {
	entries []tokenEntry
	head, n int
	index   oaTable[tokenMAC]
}

type tokenEntry struct {
	mac  tokenMAC
	addr netip.AddrPort
}

func (t *tokenTable) init(size int) {
	t.entries = make([]tokenEntry, size)
	t.head, t.n = 0, 0
	t.index.init(size, newMACHash())
}

// findOrAdd records that mac was used from addr and reports whether that is
// allowed: true for a new token or one seen before from the same address,
// false for a token seen before from another address.
func (t *tokenTable) findOrAdd(mac tokenMAC, addr netip.AddrPort) bool {
	if pos, ok := t.index.get(mac); ok {
		return t.entries[pos].addr == addr
	}
	size := len(t.entries)
	if t.n == size {
		t.index.del(t.entries[t.head].mac)
		t.head = (t.head + 1) % size
		t.n--
	}
	pos := (t.head + t.n) % size
	t.entries[pos] = tokenEntry{mac: mac, addr: addr}
	t.index.put(mac, int32(pos))
	t.n++
	return true
}

func (t *tokenTable) clear() {
	clear(t.entries)
	t.head, t.n = 0, 0
	t.index.clear()
}

// Nonce bookkeeping shared by every Server in the process.
//
// A server seals with the server-to-client key of a token. Three kinds of
// packet do so, and none may repeat a (key, nonce) pair, even when a server
// is stopped and another started in the same process and the same token
// reconnects (the 1.4.0 security fix of the reference):
//
//   - denied and challenge packets use globalSequence, which starts at 2^63,
//     is shared by all servers and is never reset;
//   - keep-alive, payload and disconnect packets use the session sequence,
//     which starts at 0 for a new token and, through sessionRegistry,
//     continues where the last session with the same token stopped;
//   - challenge tokens use a challenge key that is random for each server.

// globalSequenceCount counts sequences handed out by nextGlobalSequence.
var globalSequenceCount atomic.Uint64

// nextGlobalSequence returns the next process-wide sequence, from 2^63 up.
func nextGlobalSequence() uint64 {
	return 1<<63 + globalSequenceCount.Add(1) - 1
}

// sessionRegistrySize bounds the process-wide session registry: how many
// unexpired tokens it can remember. 64 Ki entries take about 5 MiB,
// allocated when the first server starts.
const sessionRegistrySize = 1 << 16

// sessionRegistry remembers, per connect token, the next session sequence
// the server-to-client key may use. An entry is reserved when a request is
// answered with a challenge, held (active) while a slot uses the token and
// kept after the session ends until the token expires, because until then
// the same token can reconnect. Expired entries are swept when the registry
// is full; if it is still full the request is ignored.
type sessionRegistry struct {
	mu        sync.Mutex
	entries   []sessionEntry
	free      []int32
	index     oaTable[tokenMAC]
	lastSweep uint64
}

type sessionEntry struct {
	mac    tokenMAC
	next   uint64 // next sequence to send with this token's key
	expire uint64 // token expire timestamp (unix seconds)
	active bool   // a slot is using the token now
}

func newSessionRegistry(size int) *sessionRegistry {
	r := &sessionRegistry{
		entries: make([]sessionEntry, size),
		free:    make([]int32, size),
	}
	for i := range r.free {
		r.free[i] = int32(size - 1 - i)
	}
	r.index.init(size, newMACHash())
	return r
}

var (
	globalSessionsOnce sync.Once
	globalSessions     *sessionRegistry
)

// processSessions returns the process-wide registry, allocating it on first
// use.
func processSessions() *sessionRegistry {
	globalSessionsOnce.Do(func() { globalSessions = newSessionRegistry(sessionRegistrySize) })
	return globalSessions
}

// reserve makes sure the registry has an entry for mac. It reports false
// when the registry is full of entries that are in use or unexpired.
func (r *sessionRegistry) reserve(mac tokenMAC, expire, now uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.index.get(mac); ok {
		e := &r.entries[i]
		e.expire = max(e.expire, expire)
		return true
	}
	if len(r.free) == 0 {
		r.sweep(now)
	}
	if len(r.free) == 0 {
		return false
	}
	i := r.free[len(r.free)-1]
	r.free = r.free[:len(r.free)-1]
	r.entries[i] = sessionEntry{mac: mac, expire: expire}
	r.index.put(mac, i)
	return true
}

// sweep frees expired entries no slot uses. It runs at most once per second
// so that a registry full of live tokens does not cost a full scan for every
// request.
func (r *sessionRegistry) sweep(now uint64) {
	if now == r.lastSweep {
		return
	}
	r.lastSweep = now
	for i := range r.entries {
		e := &r.entries[i]
		if e.expire == 0 || e.active || e.expire > now {
			continue
		}
		if r.index.del(e.mac) {
			r.free = append(r.free, int32(i)) // within capacity: never grows
		}
		*e = sessionEntry{}
	}
}

// acquire marks the token's entry as used by a slot and returns the
// sequence the session starts from. It fails when the token has no entry
// (it was never reserved, or expired and was swept) or another live session
// in this process holds it: either way starting one could repeat nonces.
func (r *sessionRegistry) acquire(mac tokenMAC) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.index.get(mac)
	if !ok || r.entries[i].active {
		return 0, false
	}
	r.entries[i].active = true
	return r.entries[i].next, true
}

// release ends the session holding mac; next is the first sequence it did
// not use.
func (r *sessionRegistry) release(mac tokenMAC, next uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.index.get(mac); ok {
		e := &r.entries[i]
		e.active = false
		e.next = max(e.next, next)
	}
}

// used returns how many tokens the registry remembers.
func (r *sessionRegistry) used() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.index.len()
}
