package engine

import (
	"encoding/binary"
	"hash/maphash"
	"net/netip"
)

// oaTable is a fixed-capacity open-addressing hash table from K to int32.
//
// The server looks up the source address of every datagram (address -> slot,
// address -> encryption mapping), so the table must be O(1), allocation free
// and bounded: it is allocated once with room for limit keys at a load
// factor of at most 1/2, uses linear probing, and deletes by backward shift,
// so there are no tombstones and a long-running server never degrades.
//
// Hashes are seeded per table (hash/maphash), so an attacker choosing source
// addresses cannot aim for one probe chain.
type oaTable[K comparable] struct {
	slots []oaSlot[K]
	mask  uint64
	n     int
	limit int
	hash  func(K) uint64
}

type oaSlot[K comparable] struct {
	key  K
	hash uint64 // 0 marks an empty slot; stored hashes have hashUsed set
	val  int32
}

// hashUsed is set in every stored hash so that 0 can mean "empty". It is the
// top bit, which the slot index (low bits) never uses.
const hashUsed = 1 << 63

// init allocates room for limit keys.
func (t *oaTable[K]) init(limit int, hash func(K) uint64) {
	size := 8
	for size < 2*limit {
		size <<= 1
	}
	t.slots = make([]oaSlot[K], size)
	t.mask = uint64(size - 1)
	t.n = 0
	t.limit = limit
	t.hash = hash
}

// len returns the number of keys.
func (t *oaTable[K]) len() int { return t.n }

// find returns the slot index holding k, or -1.
func (t *oaTable[K]) find(k K, h uint64) int {
	i := h & t.mask
	for {
		s := &t.slots[i]
		if s.hash == 0 {
			return -1
		}
		if s.hash == h && s.key == k {
			return int(i)
		}
		i = (i + 1) & t.mask
	}
}

// get returns the value stored for k.
func (t *oaTable[K]) get(k K) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	i := t.find(k, t.hash(k)|hashUsed)
	if i < 0 {
		return 0, false
	}
	return t.slots[i].val, true
}

// put stores v for k, replacing an existing value. It reports false, and
// stores nothing, when k is new and the table already holds limit keys.
func (t *oaTable[K]) put(k K, v int32) bool {
	h := t.hash(k) | hashUsed
	i := h & t.mask
	for {
		s := &t.slots[i]
		if s.hash == 0 {
			if t.n >= t.limit {
				return false
			}
			*s = oaSlot[K]{key: k, hash: h, val: v}
			t.n++
			return true
		}
		if s.hash == h && s.key == k {
			s.val = v
			return true
		}
		i = (i + 1) & t.mask
	}
}

// del removes k and reports whether it was present. The entries after it in
// its probe run are shifted back so that every key stays reachable from its
// home slot without tombstones.
func (t *oaTable[K]) del(k K) bool {
	if t.n == 0 {
		return false
	}
	found := t.find(k, t.hash(k)|hashUsed)
	if found < 0 {
		return false
	}
	i := uint64(found)
	j := i
	for {
		j = (j + 1) & t.mask
		s := &t.slots[j]
		if s.hash == 0 {
			break
		}
		// The entry at j may move to the hole at i only if i lies on its
		// probe path, i.e. between its home slot and j.
		home := s.hash & t.mask
		if (j-home)&t.mask >= (j-i)&t.mask {
			t.slots[i] = *s
			i = j
		}
	}
	t.slots[i] = oaSlot[K]{}
	t.n--
	return true
}

// clear removes every key.
func (t *oaTable[K]) clear() {
	clear(t.slots)
	t.n = 0
}

// newAddrHash returns a seeded hash of an address and port. IPv4 and
// IPv4-mapped IPv6 forms of an address hash alike, which is harmless: keys
// are still compared exactly.
func newAddrHash() func(netip.AddrPort) uint64 {
	seed := maphash.MakeSeed()
	return func(a netip.AddrPort) uint64 {
		var b [18]byte
		ip := a.Addr().As16()
		copy(b[:16], ip[:])
		binary.LittleEndian.PutUint16(b[16:], a.Port())
		return maphash.Bytes(seed, b[:])
	}
}

// newIDHash returns a seeded hash of a client id.
func newIDHash() func(uint64) uint64 {
	seed := maphash.MakeSeed()
	return func(id uint64) uint64 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], id)
		return maphash.Bytes(seed, b[:])
	}
}
