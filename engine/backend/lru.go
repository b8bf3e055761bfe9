package backend

import (
	"container/list"
	"math"
	"time"
)

// lru is a bounded map that forgets its least recently used entry when a
// new one does not fit: the tables of the rate and refused-auth limits.
// Not safe for concurrent use; its owner holds a lock.
type lru[K comparable, V any] struct {
	max     int
	entries map[K]*list.Element // of *lruEntry[K, V]
	order   list.List           // front: most recently used
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, entries: make(map[K]*list.Element)}
}

// peek returns key's value without marking it used.
func (c *lru[K, V]) peek(key K) (*V, bool) {
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	return &e.Value.(*lruEntry[K, V]).val, true
}

// use returns key's value, marking it the most recently used, and
// whether it was there; a new key gets the zero value, evicting the least
// recently used entry when the table is full.
func (c *lru[K, V]) use(key K) (*V, bool) {
	if e, ok := c.entries[key]; ok {
		c.order.MoveToFront(e)
		return &e.Value.(*lruEntry[K, V]).val, true
	}
	if len(c.entries) >= c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.entries, old.Value.(*lruEntry[K, V]).key)
	}
	v := &lruEntry[K, V]{key: key}
	c.entries[key] = c.order.PushFront(v)
	return &v.val, false
}

func (c *lru[K, V]) len() int { return len(c.entries) }

// tokenBucket holds up to a burst of tokens, refilled at a rate.
type tokenBucket struct {
	tokens float64
	last   time.Time // of the last refill
}

// fill makes the bucket full at now.
func (b *tokenBucket) fill(now time.Time, burst int) {
	b.tokens, b.last = float64(burst), now
}

// refill adds what perSecond gave since the last refill, up to burst.
func (b *tokenBucket) refill(now time.Time, perSecond float64, burst int) {
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens = math.Min(float64(burst), b.tokens+dt.Seconds()*perSecond)
		b.last = now
	}
}

// wait returns how long until the bucket holds a whole token.
func (b *tokenBucket) wait(perSecond float64) time.Duration {
	return time.Duration((1 - b.tokens) / perSecond * float64(time.Second))
}
