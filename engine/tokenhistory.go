package engine

import (
	"hash/maphash"
	"net/netip"
	"sync/atomic"

	"github.com/netcode-go/netcode/codec"
)

// tokenMAC identifies a connect token: the tag of its encrypted private
// part. Only the web backend can make a valid one, and it differs for every
// token.
type tokenMAC = [codec.MACBytes]byte

// The connect-token history enforces "one token, one session"
// (../shared/spec/token-lifecycle.md, the reference's 1.4.5 rules). Reference
// clients restart their packet sequence at 0 on every connect, so a second
// session on a token would repeat every client-to-server nonce of the first
// under the same key; only refusing the token prevents that.
//
//   - A token not in the history gets a pending entry bound to the address
//     that presented it. Until it is consumed, the same token is admitted
//     from that address only (the client resends its request at 10 Hz).
//   - The entry is consumed when the handshake's client gets its slot; a
//     consumed entry admits nothing, whether or not its client is still
//     connected.
//   - An entry lives until its token expires. A history whose entries all
//     hold unexpired tokens refuses new tokens rather than evicting one, so
//     a flood of valid tokens can never make a used one usable again.
//   - One client id holds at most TokenHistoryPerClientID live entries
//     (not in the reference): a new token beyond that is refused, so that
//     filling the history, which locks every new player out, takes
//     size/TokenHistoryPerClientID accounts rather than a few. The
//     per-id counts have room for as many ids, no more: a history
//     holding tokens of that many ids refuses other ids, which takes as
//     many accounts, and keeps the counts at 6 bytes an entry.
//
// Lookups are O(1) through a hash index of entry numbers (macIndex, 4 bytes
// a bucket; the reference's 8 entries per client slot cost about 500 bytes
// a slot in all). Expired entries are reclaimed by
// an incremental sweep (sweep, a bounded share per timer scan) and, when a
// new token finds no free entry, by a full sweep at most once per second of
// token time (expiry has one-second resolution, so a second sweep within
// the same second could not find more).
type tokenHistory struct {
	entries []historyEntry
	index   macIndex
	perID   oaTable[uint64] // client id -> live entries
	free    []int32         // stack of free entries
	cursor  int             // next entry the incremental sweep looks at
	// lastFullSweep is the unix second of the last full sweep (+1, so that
	// the zero value means never).
	lastFullSweep uint64
	// pending and consumed count the entries in each state; read by Stats
	// from other goroutines.
	pending, consumed atomic.Int64
}

type historyState uint8

const (
	entryFree historyState = iota
	entryPending
	entryConsumed
)

type historyEntry struct {
	mac tokenMAC
	// ip and port are the address that first presented the token (IPv4 as
	// IPv4-mapped IPv6: 48 bytes an entry instead of 64).
	ip       [16]byte
	expire   uint64 // the token's expire timestamp, unix seconds
	clientID uint64
	port     uint16
	state    historyState
}

func (e *historyEntry) from(a netip.AddrPort) bool {
	return e.port == a.Port() && e.ip == a.Addr().As16()
}

// historyResult is what presenting a token to the history decided.
type historyResult uint8

const (
	// historyNew: the token was not in the history; it is now pending for
	// this address.
	historyNew historyResult = iota
	// historyRetry: the token is pending for this address (a repeated
	// request during the handshake).
	historyRetry
	// historyOtherAddress: the token is pending for another address.
	historyOtherAddress
	// historyConsumed: the token has carried a session.
	historyConsumed
	// historyFull: every entry holds an unexpired token.
	historyFull
	// historyClientFull: the token's client id holds
	// TokenHistoryPerClientID live entries.
	historyClientFull
)

func (h *tokenHistory) init(size int) {
	h.entries = make([]historyEntry, size)
	h.index.init(size)
	h.perID.init(max(size/TokenHistoryPerClientID, min(size, 64)), newIDHash())
	h.free = make([]int32, size)
	for i := range h.free {
		h.free[i] = int32(size - 1 - i)
	}
	h.cursor = 0
	h.lastFullSweep = 0
	h.pending.Store(0)
	h.consumed.Store(0)
}

// present looks up a token of client id presented from addr at now (unix
// seconds) and, if it is new, makes it pending for addr. It returns the
// entry's index for historyNew and historyRetry.
func (h *tokenHistory) present(mac tokenMAC, addr netip.AddrPort, id, expire, now uint64) (int32, historyResult) {
	if i, ok := h.index.get(h.entries, mac); ok {
		e := &h.entries[i]
		switch {
		case e.expire <= now:
			// The codec refuses expired tokens before this, so only a
			// clock running backwards could get here; the entry is free.
			h.release(i)
		case e.state == entryConsumed:
			return i, historyConsumed
		case !e.from(addr):
			return i, historyOtherAddress
		default:
			return i, historyRetry
		}
	}
	n, _ := h.perID.get(id)
	full := func() bool { return len(h.free) == 0 || (n == 0 && h.perID.len() == h.perID.limit) }
	if (full() || n >= TokenHistoryPerClientID) && now+1 != h.lastFullSweep {
		h.lastFullSweep = now + 1
		h.sweep(now, len(h.entries))
		n, _ = h.perID.get(id)
	}
	if full() {
		return -1, historyFull
	}
	if n >= TokenHistoryPerClientID {
		return -1, historyClientFull
	}
	i := h.free[len(h.free)-1]
	h.free = h.free[:len(h.free)-1]
	h.entries[i] = historyEntry{mac: mac, ip: addr.Addr().As16(), port: addr.Port(), expire: expire, clientID: id, state: entryPending}
	h.index.put(h.entries, i)
	h.perID.put(id, n+1) // room: checked above
	h.pending.Add(1)
	return i, historyNew
}

// consume marks entry i, pending for mac, as consumed at now. It reports
// false when the entry no longer holds that pending, unexpired token.
func (h *tokenHistory) consume(i int32, mac tokenMAC, now uint64) bool {
	if i < 0 || int(i) >= len(h.entries) {
		return false
	}
	e := &h.entries[i]
	if e.state != entryPending || e.mac != mac || e.expire <= now {
		return false
	}
	e.state = entryConsumed
	h.pending.Add(-1)
	h.consumed.Add(1)
	return true
}

// sweep frees the expired entries among the next n, continuing where the
// last sweep stopped.
func (h *tokenHistory) sweep(now uint64, n int) {
	size := len(h.entries)
	n = min(n, size)
	for range n {
		i := h.cursor
		if h.cursor++; h.cursor == size {
			h.cursor = 0
		}
		if e := &h.entries[i]; e.state != entryFree && e.expire <= now {
			h.release(int32(i))
		}
	}
}

func (h *tokenHistory) release(i int32) {
	e := &h.entries[i]
	switch e.state {
	case entryPending:
		h.pending.Add(-1)
	case entryConsumed:
		h.consumed.Add(-1)
	default:
		return
	}
	h.index.del(h.entries, i)
	if n, _ := h.perID.get(e.clientID); n > 1 {
		h.perID.put(e.clientID, n-1)
	} else {
		h.perID.del(e.clientID)
	}
	*e = historyEntry{}
	h.free = append(h.free, i) // within capacity: never grows
}

// size returns the number of entries.
func (h *tokenHistory) size() int { return len(h.entries) }

// macIndex finds a history entry by its token's MAC: open addressing with
// linear probing over entry numbers (+1, so 0 is empty), at a load factor of
// at most 1/2, deleting by backward shift (no tombstones). Keys are read
// from the entries themselves, which keeps a bucket at 4 bytes. The hash is
// seeded per index.
type macIndex struct {
	buckets []int32
	mask    uint64
	seed    maphash.Seed
}

func (x *macIndex) init(entries int) {
	size := 8
	for size < 2*entries {
		size <<= 1
	}
	x.buckets = make([]int32, size)
	x.mask = uint64(size - 1)
	x.seed = maphash.MakeSeed()
}

func (x *macIndex) home(mac *tokenMAC) uint64 {
	return maphash.Bytes(x.seed, mac[:]) & x.mask
}

// get returns the entry holding mac.
func (x *macIndex) get(entries []historyEntry, mac tokenMAC) (int32, bool) {
	for b := x.home(&mac); ; b = (b + 1) & x.mask {
		v := x.buckets[b]
		if v == 0 {
			return 0, false
		}
		if entries[v-1].mac == mac {
			return v - 1, true
		}
	}
}

// put indexes entry i, whose MAC is not indexed yet. The index has room:
// it holds at most len(entries) keys in twice as many buckets.
func (x *macIndex) put(entries []historyEntry, i int32) {
	b := x.home(&entries[i].mac)
	for x.buckets[b] != 0 {
		b = (b + 1) & x.mask
	}
	x.buckets[b] = i + 1
}

// del removes entry i, which is indexed. The entries after it in its probe
// run move back so that each stays reachable from its home bucket.
func (x *macIndex) del(entries []historyEntry, i int32) {
	b := x.home(&entries[i].mac)
	for x.buckets[b] != i+1 {
		b = (b + 1) & x.mask
	}
	hole := b
	for j := (hole + 1) & x.mask; x.buckets[j] != 0; j = (j + 1) & x.mask {
		// The entry at j may move to the hole only if the hole lies on its
		// probe path, between its home bucket and j.
		home := x.home(&entries[x.buckets[j]-1].mac)
		if (j-home)&x.mask >= (j-hole)&x.mask {
			x.buckets[hole] = x.buckets[j]
			hole = j
		}
	}
	x.buckets[hole] = 0
}
