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

// Release hands the slot returned by Front back to the producer. Consumer
// only. The slot is not cleared: items that hold pointers should be
// overwritten by the producer or cleared by the consumer.
func (r *SPSC[T]) Release() {
	r.head.Store(r.head.Load() + 1)
}
