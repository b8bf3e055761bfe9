package ring

import (
	"errors"
	"math/bits"
)

// ErrCapacity is returned for a capacity that is not a power of two in
// [1, 1<<30].
var ErrCapacity = errors.New("ring: capacity must be a power of two between 1 and 2^30")

// Queue is a fixed-capacity FIFO for one goroutine. Its capacity is a power
// of two so that positions wrap with a mask, and it never grows: Push on a
// full queue fails and the caller counts the drop.
type Queue[T any] struct {
	items      []T
	mask       uint64
	head, tail uint64 // tail - head = length
}

// NewQueue returns a queue holding up to capacity items.
func NewQueue[T any](capacity int) (*Queue[T], error) {
	q := new(Queue[T])
	if err := q.Init(capacity); err != nil {
		return nil, err
	}
	return q, nil
}

// Init allocates the queue in place (for queues embedded in larger structs).
func (q *Queue[T]) Init(capacity int) error {
	if capacity < 1 || capacity > 1<<30 || bits.OnesCount(uint(capacity)) != 1 {
		return ErrCapacity
	}
	q.items = make([]T, capacity)
	q.mask = uint64(capacity - 1)
	q.head, q.tail = 0, 0
	return nil
}

// Len returns the number of queued items.
func (q *Queue[T]) Len() int { return int(q.tail - q.head) }

// Cap returns the capacity.
func (q *Queue[T]) Cap() int { return len(q.items) }

// Push appends v and reports whether there was room.
func (q *Queue[T]) Push(v T) bool {
	if q.tail-q.head == uint64(len(q.items)) {
		return false
	}
	q.items[q.tail&q.mask] = v
	q.tail++
	return true
}

// Pop removes and returns the oldest item.
func (q *Queue[T]) Pop() (T, bool) {
	var zero T
	if q.tail == q.head {
		return zero, false
	}
	i := q.head & q.mask
	v := q.items[i]
	q.items[i] = zero
	q.head++
	return v, true
}

// Peek returns the oldest item without removing it.
func (q *Queue[T]) Peek() (T, bool) {
	var zero T
	if q.tail == q.head {
		return zero, false
	}
	return q.items[q.head&q.mask], true
}

// Clear empties the queue.
func (q *Queue[T]) Clear() {
	clear(q.items)
	q.head, q.tail = 0, 0
}
