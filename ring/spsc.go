package ring

import (
	"math/bits"
	"sync/atomic"
)

// cacheLine pads the positions apart so the producer's and the consumer's
// writes don't bounce one cache line between cores.
type cacheLine [64]byte

// SPSC is a fixed-capacity, lock-free ring for exactly one producer
// goroutine and one consumer goroutine: the hand-off between a server shard
// and the application. Push and Pop take no lock and allocate nothing; each
// side keeps a cached copy of the other's position and reads the shared one
// only when the cache says the ring is full (producer) or empty (consumer).
type SPSC[T any] struct {
	_          cacheLine
	head       atomic.Uint64 // next position to pop; written by the consumer
	cachedTail uint64        // consumer's view of tail
	_          cacheLine
	tail       atomic.Uint64 // next position to push; written by the producer
	cachedHead uint64        // producer's view of head
	_          cacheLine
	items      []T
	mask       uint64
}

// NewSPSC returns a ring holding up to capacity items (a power of two).
func NewSPSC[T any](capacity int) (*SPSC[T], error) {
	if capacity < 1 || capacity > 1<<30 || bits.OnesCount(uint(capacity)) != 1 {
		return nil, ErrCapacity
	}
	return &SPSC[T]{items: make([]T, capacity), mask: uint64(capacity - 1)}, nil
}

// Cap returns the capacity.
func (r *SPSC[T]) Cap() int { return len(r.items) }

// Len returns the number of items; exact only when both sides are idle.
func (r *SPSC[T]) Len() int { return int(r.tail.Load() - r.head.Load()) }

// Push appends v and reports whether there was room. Producer only.
func (r *SPSC[T]) Push(v T) bool {
	t := r.tail.Load()
	if t-r.cachedHead == uint64(len(r.items)) {
		r.cachedHead = r.head.Load()
		if t-r.cachedHead == uint64(len(r.items)) {
			return false
		}
	}
	r.items[t&r.mask] = v
	r.tail.Store(t + 1) // publishes the item
	return true
}

// Pop removes and returns the oldest item. Consumer only.
func (r *SPSC[T]) Pop() (T, bool) {
	var zero T
	h := r.head.Load()
	if h == r.cachedTail {
		r.cachedTail = r.tail.Load()
		if h == r.cachedTail {
			return zero, false
		}
	}
	i := h & r.mask
	v := r.items[i]
	r.items[i] = zero
	r.head.Store(h + 1) // hands the slot back to the producer
	return v, true
}

// Reserve returns the next free slot for the producer to fill in place, or
// false when the ring is full. The item becomes visible to the consumer at
// Commit. Producer only.
func (r *SPSC[T]) Reserve() (*T, bool) {
	t := r.tail.Load()
	if t-r.cachedHead == uint64(len(r.items)) {
		r.cachedHead = r.head.Load()
		if t-r.cachedHead == uint64(len(r.items)) {
			return nil, false
		}
	}
	return &r.items[t&r.mask], true
}

// Commit publishes the slot returned by the last Reserve. Producer only.
func (r *SPSC[T]) Commit() {
	r.tail.Store(r.tail.Load() + 1)
}

// ReserveAt returns the free slot k places after the one Reserve returns,
// or false unless k+1 slots are free, so that a record of several items is
// filled before CommitN publishes it whole. Producer only.
func (r *SPSC[T]) ReserveAt(k int) (*T, bool) {
	if k < 0 || k >= len(r.items) {
		return nil, false
	}
	t := r.tail.Load()
	need := uint64(len(r.items) - k)
	if t-r.cachedHead >= need {
		r.cachedHead = r.head.Load()
		if t-r.cachedHead >= need {
			return nil, false
		}
	}
	return &r.items[(t+uint64(k))&r.mask], true
}

// CommitN publishes the n slots reserved with ReserveAt(0..n-1). Producer
// only.
func (r *SPSC[T]) CommitN(n int) {
	r.tail.Store(r.tail.Load() + uint64(n))
}

// Front returns the oldest item in place, or false when the ring is empty.
// It stays valid until Release. Consumer only.
func (r *SPSC[T]) Front() (*T, bool) {
	h := r.head.Load()
	if h == r.cachedTail {
		r.cachedTail = r.tail.Load()
		if h == r.cachedTail {
			return nil, false
		}
	}
	return &r.items[h&r.mask], true
}

// FrontAt returns the item k places after the oldest, in place, or false
// unless at least k+1 items are queued. Consumer only.
func (r *SPSC[T]) FrontAt(k int) (*T, bool) {
	if k < 0 || k >= len(r.items) {
		return nil, false
	}
	h := r.head.Load()
	if r.cachedTail-h <= uint64(k) {
		r.cachedTail = r.tail.Load()
		if r.cachedTail-h <= uint64(k) {
			return nil, false
		}
	}
	return &r.items[(h+uint64(k))&r.mask], true
}

// ReleaseN hands the n oldest slots back to the producer. Consumer only.
func (r *SPSC[T]) ReleaseN(n int) {
	r.head.Store(r.head.Load() + uint64(n))
}

// Release hands the slot returned by Front back to the producer. Consumer
// only. The slot is not cleared: items that hold pointers should be
// overwritten by the producer or cleared by the consumer.
func (r *SPSC[T]) Release() {
	r.head.Store(r.head.Load() + 1)
}
