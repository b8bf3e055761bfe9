package wtconn

import (
	"bytes"
	"net/netip"
	"sync"
	"testing"

	"github.com/netcode-go/netcode/batchio"
)

var srvAddr = netip.MustParseAddrPort("127.0.0.1:4433")

// TestQueueBounded: a flood fills the queue and the surplus is dropped and
// counted, the queued datagrams come out in order and intact, and
// datagrams too long for an entry or a reader's buffer are dropped.
func TestQueueBounded(t *testing.T) {
	q := newQueue(4, 8)
	for i := range 6 {
		q.push([]byte{byte(i), 1, 2}, srvAddr)
	}
	q.push(make([]byte, 9), srvAddr) // longer than an entry
	q.countTooLong()                 // one the browser side did not copy
	if d, l := q.counts(); d != 2 || l != 2 {
		t.Fatalf("dropped %d, too long %d; want 2 and 2", d, l)
	}
	msgs := batchio.NewMessages(3, 8)
	n := q.pop(msgs)
	if n != 3 {
		t.Fatalf("pop returned %d; want 3", n)
	}
	for i, m := range msgs[:n] {
		if want := []byte{byte(i), 1, 2}; !bytes.Equal(m.Buf[:m.N], want) || m.Addr != srvAddr {
			t.Fatalf("message %d is %x from %v; want %x from %v", i, m.Buf[:m.N], m.Addr, want, srvAddr)
		}
	}
	// The last one does not fit a 2-byte buffer: dropped, not truncated.
	short := []batchio.Message{{Buf: make([]byte, 2)}}
	if n := q.pop(short); n != 0 {
		t.Fatalf("pop into a short buffer returned %d; want 0", n)
	}
	if _, l := q.counts(); l != 3 {
		t.Fatalf("too long %d after a short buffer; want 3", l)
	}
	if n := q.pop(msgs); n != 0 {
		t.Fatalf("pop of an empty queue returned %d", n)
	}
	// Room again after the pops.
	q.push([]byte{9}, srvAddr)
	if n := q.pop(msgs); n != 1 || msgs[0].Buf[0] != 9 {
		t.Fatalf("pop after refill returned %d, %x", n, msgs[0].Buf[:msgs[0].N])
	}
}

// TestQueueConcurrent: pushes from one goroutine (the browser's callbacks)
// and pops from another lose nothing that was not counted, and every push
// wakes the reader.
func TestQueueConcurrent(t *testing.T) {
	q := newQueue(16, 4)
	const total = 10000
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range total {
			q.push([]byte{byte(i), byte(i >> 8)}, srvAddr)
		}
	})
	msgs := batchio.NewMessages(8, 4)
	got, last := 0, -1
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; ; {
		n := q.pop(msgs)
		for _, m := range msgs[:n] {
			v := int(m.Buf[0]) | int(m.Buf[1])<<8
			if v <= last {
				t.Fatalf("datagram %d after %d: out of order", v, last)
			}
			last = v
		}
		got += n
		if n == 0 {
			if finished {
				break
			}
			select {
			case <-q.notify:
			case <-done:
				finished = true
			}
		}
	}
	dropped, _ := q.counts()
	if got+int(dropped) != total {
		t.Fatalf("read %d and dropped %d of %d", got, dropped, total)
	}
}
