package engine

import "hash/maphash"

// entryIndex finds a history entry by a key read from the entry itself
// (its token's MAC, its client id): open addressing with linear probing
// over entry numbers (+1, so 0 is empty), at a load factor of at most 1/2,
// deleting by backward shift (no tombstones). Reading keys from the
// entries keeps a bucket at 4 bytes. The hash is seeded per index, so
// tokens and ids cannot be chosen to collide.
type entryIndex[K comparable] struct {
	buckets []int32
	mask    uint64
	seed    maphash.Seed
	key     func(*historyEntry) K
	hash    func(maphash.Seed, K) uint64
}

func (x *entryIndex[K]) init(entries int, key func(*historyEntry) K, hash func(maphash.Seed, K) uint64) {
	size := 8
	for size < 2*entries {
		size <<= 1
	}
	x.buckets = make([]int32, size)
	x.mask = uint64(size - 1)
	x.seed = maphash.MakeSeed()
	x.key, x.hash = key, hash
}

func (x *entryIndex[K]) home(k K) uint64 { return x.hash(x.seed, k) & x.mask }

// get returns the entry indexed under k.
func (x *entryIndex[K]) get(entries []historyEntry, k K) (int32, bool) {
	for b := x.home(k); ; b = (b + 1) & x.mask {
		v := x.buckets[b]
		if v == 0 {
			return 0, false
		}
		if x.key(&entries[v-1]) == k {
			return v - 1, true
		}
	}
}

// put indexes entry i, whose key is not indexed yet. The index has room:
// it holds at most len(entries) keys in twice as many buckets.
func (x *entryIndex[K]) put(entries []historyEntry, i int32) {
	b := x.home(x.key(&entries[i]))
	for x.buckets[b] != 0 {
		b = (b + 1) & x.mask
	}
	x.buckets[b] = i + 1
}

// bucket returns the bucket holding entry i, which is indexed.
func (x *entryIndex[K]) bucket(entries []historyEntry, i int32) uint64 {
	b := x.home(x.key(&entries[i]))
	for x.buckets[b] != i+1 {
		b = (b + 1) & x.mask
	}
	return b
}

// replace indexes entry j, which has entry i's key, in i's place.
func (x *entryIndex[K]) replace(entries []historyEntry, i, j int32) {
	x.buckets[x.bucket(entries, i)] = j + 1
}

// del removes entry i, which is indexed. The entries after it in its probe
// run move back so that each stays reachable from its home bucket.
func (x *entryIndex[K]) del(entries []historyEntry, i int32) {
	hole := x.bucket(entries, i)
	for j := (hole + 1) & x.mask; x.buckets[j] != 0; j = (j + 1) & x.mask {
		// The entry at j may move to the hole only if the hole lies on its
		// probe path, between its home bucket and j.
		home := x.home(x.key(&entries[x.buckets[j]-1]))
		if (j-home)&x.mask >= (j-hole)&x.mask {
			x.buckets[hole] = x.buckets[j]
			hole = j
		}
	}
	x.buckets[hole] = 0
}
