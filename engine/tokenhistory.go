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
//   - One client id holds at most PendingTokensPerClientID pending and
//     TokenHistoryPerClientID live entries in all (not in the
//     reference): a new token beyond either is refused, so that filling
//     the history with tokens that never finish a handshake, which locks
//     every new player out, takes size/PendingTokensPerClientID accounts
//     rather than a few. An id's entries are chained (nextOfID) from an
//     index of chain heads, so counting them costs a walk of at most
//     TokenHistoryPerClientID entries and the bookkeeping 12 bytes an
//     entry.
//
// Lookups are O(1) through hash indexes of entry numbers (entryIndex, 4
// bytes a bucket; the reference's 8 entries per client slot cost about 600
// bytes a slot in all). Expired entries are reclaimed by
// an incremental sweep (sweep, a bounded share per timer scan) and, when a
// new token finds no free entry, by a full sweep at most once per second of
// token time (expiry has one-second resolution, so a second sweep within
// the same second could not find more).
type tokenHistory struct {
	entries []historyEntry
	byMAC   entryIndex[tokenMAC]
	byID    entryIndex[uint64] // the head of each client id's chain
	free    []int32            // stack of free entries
	cursor  int                // next entry the incremental sweep looks at
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
	nextOfID int32 // the next entry of the client id, or -1
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
	// PendingTokensPerClientID pending or TokenHistoryPerClientID live
	// entries.
	historyClientFull
)

func (h *tokenHistory) init(size int) {
	h.entries = make([]historyEntry, size)
	h.byMAC.init(size, func(e *historyEntry) tokenMAC { return e.mac },
		func(seed maphash.Seed, mac tokenMAC) uint64 { return maphash.Bytes(seed, mac[:]) })
	h.byID.init(size, func(e *historyEntry) uint64 { return e.clientID }, maphash.Comparable[uint64])
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
	if i, ok := h.byMAC.get(h.entries, mac); ok {
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
	pending, n := h.countID(id, now)
	if len(h.free) == 0 && now+1 != h.lastFullSweep {
		h.lastFullSweep = now + 1
		h.sweep(now, len(h.entries))
	}
	if len(h.free) == 0 {
		return -1, historyFull
	}
	if pending >= PendingTokensPerClientID || n >= TokenHistoryPerClientID {
		return -1, historyClientFull
	}
	i := h.free[len(h.free)-1]
	h.free = h.free[:len(h.free)-1]
	h.entries[i] = historyEntry{mac: mac, ip: addr.Addr().As16(), port: addr.Port(), expire: expire,
		clientID: id, nextOfID: -1, state: entryPending}
	h.byMAC.put(h.entries, i)
	if head, ok := h.byID.get(h.entries, id); ok {
		h.entries[i].nextOfID = head
		h.byID.replace(h.entries, head, i)
	} else {
		h.byID.put(h.entries, i)
	}
	h.pending.Add(1)
	return i, historyNew
}

// countID frees the expired entries of client id and returns how many it
// holds pending and in all. Its chain is at most TokenHistoryPerClientID
// long: present adds to it only below that.
func (h *tokenHistory) countID(id, now uint64) (pending, all int) {
	i, ok := h.byID.get(h.entries, id)
	for ok && i >= 0 {
		e := &h.entries[i]
		next := e.nextOfID
		switch {
		case e.expire <= now:
			h.release(i)
		case e.state == entryPending:
			pending++
			all++
		default:
			all++
		}
		i = next
	}
	return pending, all
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
	h.byMAC.del(h.entries, i)
	h.unlinkID(i)
	*e = historyEntry{}
	h.free = append(h.free, i) // within capacity: never grows
}

// size returns the number of entries.
func (h *tokenHistory) size() int { return len(h.entries) }

// unlinkID takes entry i out of its client id's chain.
func (h *tokenHistory) unlinkID(i int32) {
	e := &h.entries[i]
	head, _ := h.byID.get(h.entries, e.clientID) // i is in the chain
	switch {
	case head == i && e.nextOfID >= 0:
		h.byID.replace(h.entries, i, e.nextOfID)
	case head == i:
		h.byID.del(h.entries, i)
	default:
		p := head
		for h.entries[p].nextOfID != i {
			p = h.entries[p].nextOfID
		}
		h.entries[p].nextOfID = e.nextOfID
	}
}
