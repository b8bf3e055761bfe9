package ring

import (
	"runtime"
	"testing"
	"time"
)

func TestReplayWindow(t *testing.T) {
	var r Replay
	r.Reset()
	steps := []struct {
		seq    uint64
		accept bool
	}{
		{0, true}, {0, false}, {5, true}, {3, true}, {3, false}, {300, true},
		{45, true}, // 45 > 300-256: inside the window
		{45, false},
		{44, false}, // 44 <= 300-256: too old
		{556, true}, // slot 556%256 = 44 holds 300 < 556
		{300, false},
	}
	for i, s := range steps {
		got := !r.AlreadyReceived(s.seq)
		if got != s.accept {
			t.Fatalf("step %d: sequence %d accept %v, want %v", i, s.seq, got, s.accept)
		}
		if got {
			r.Advance(s.seq)
		}
	}
	if r.MostRecent() != 556 {
		t.Fatalf("most recent %d", r.MostRecent())
	}
	// Sequence 2^64-1 is never recorded (it is the empty marker).
	r.Reset()
	max := ^uint64(0)
	r.Advance(max)
	if r.AlreadyReceived(max) {
		t.Fatal("2^64-1 recorded as received; the reference never records it")
	}
}

func TestReplayAllocs(t *testing.T) {
	var r Replay
	r.Reset()
	seq := uint64(0)
	if n := testing.AllocsPerRun(1000, func() {
		seq++
		if !r.AlreadyReceived(seq) {
			r.Advance(seq)
		}
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func TestQueue(t *testing.T) {
	for _, bad := range []int{0, -1, 3, 6, 1<<30 + 1} {
		if _, err := NewQueue[int](bad); err == nil {
			t.Errorf("capacity %d accepted", bad)
		}
	}
	q, err := NewQueue[int](4)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 { // wrap around several times
		for i := range 4 {
			if !q.Push(round*10 + i) {
				t.Fatalf("round %d: push %d failed", round, i)
			}
		}
		if q.Push(99) {
			t.Fatal("push into a full queue succeeded")
		}
		if v, ok := q.Peek(); !ok || v != round*10 {
			t.Fatalf("peek = %d, %v", v, ok)
		}
		for i := range 4 {
			if v, ok := q.Pop(); !ok || v != round*10+i {
				t.Fatalf("round %d: pop = %d, %v; want %d", round, v, ok, round*10+i)
			}
		}
		if _, ok := q.Pop(); ok || q.Len() != 0 {
			t.Fatal("pop from an empty queue succeeded")
		}
	}
	q.Push(1)
	q.Clear()
	if q.Len() != 0 || q.Cap() != 4 {
		t.Fatalf("after Clear: len %d cap %d", q.Len(), q.Cap())
	}
	if n := testing.AllocsPerRun(100, func() { q.Push(1); q.Pop() }); n != 0 {
		t.Fatalf("queue push/pop: %v allocations", n)
	}
}

func TestSPSCOrderAcrossGoroutines(t *testing.T) {
	r, err := NewSPSC[uint64](64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewSPSC[int](100); err == nil {
		t.Fatal("capacity 100 accepted")
	}
	const total = 200_000
	// Both sides yield when they cannot proceed and stop at one deadline:
	// on a loaded machine a bounded spin count ran out while the producer
	// was descheduled, and the producer then spun on a full ring forever.
	deadline := time.Now().Add(time.Minute)
	done := make(chan error, 1)
	go func() {
		next := uint64(0)
		for next < total && time.Now().Before(deadline) {
			v, ok := r.Pop()
			if !ok {
				runtime.Gosched()
				continue
			}
			if v != next {
				done <- errorf("popped %d, want %d", v, next)
				return
			}
			next++
		}
		if next != total {
			done <- errorf("consumer stopped at %d", next)
			return
		}
		done <- nil
	}()
	for i := uint64(0); i < total && time.Now().Before(deadline); {
		if r.Push(i) {
			i++
		} else {
			runtime.Gosched()
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestSPSCFullAndAllocs(t *testing.T) {
	r, _ := NewSPSC[int](4)
	for i := range 4 {
		if !r.Push(i) {
			t.Fatalf("push %d into a ring of 4 failed", i)
		}
	}
	if r.Push(9) {
		t.Fatal("push into a full ring succeeded")
	}
	if v, ok := r.Pop(); !ok || v != 0 {
		t.Fatalf("pop = %d, %v", v, ok)
	}
	if !r.Push(4) || r.Len() != 4 {
		t.Fatal("slot freed by pop was not reusable")
	}
	if n := testing.AllocsPerRun(100, func() { r.Pop(); r.Push(1) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func BenchmarkSPSC(b *testing.B) {
	r, _ := NewSPSC[uint64](1024)
	done := make(chan struct{})
	go func() {
		for got := 0; got < b.N; {
			if _, ok := r.Pop(); ok {
				got++
			}
		}
		close(done)
	}()
	for i := 0; i < b.N; {
		if r.Push(uint64(i)) {
			i++
		}
	}
	<-done
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

func TestSPSCInPlace(t *testing.T) {
	type entry struct {
		n    int
		data [64]byte
	}
	r, _ := NewSPSC[entry](8)
	const total = 50_000
	done := make(chan error, 1)
	go func() {
		for next := 0; next < total; {
			e, ok := r.Front()
			if !ok {
				continue
			}
			if e.n != next || e.data[0] != byte(next) || e.data[63] != byte(next>>8) {
				done <- errorf("item %d: n=%d data %d/%d", next, e.n, e.data[0], e.data[63])
				return
			}
			r.Release()
			next++
		}
		done <- nil
	}()
	for i := 0; i < total; {
		e, ok := r.Reserve()
		if !ok {
			continue
		}
		e.n, e.data[0], e.data[63] = i, byte(i), byte(i>>8)
		r.Commit()
		i++
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if _, ok := r.Reserve(); !ok {
			t.Fatal("empty ring has no room")
		}
		r.Commit()
	}
	if _, ok := r.Reserve(); ok {
		t.Fatal("full ring reserved a slot")
	}
}

// Records of several items, reserved and committed whole, arrive whole and
// in order on the other goroutine, and a record never fits a ring with less
// room than it needs.
func TestSPSCRecords(t *testing.T) {
	r, _ := NewSPSC[uint32](16)
	if _, ok := r.ReserveAt(16); ok {
		t.Fatal("ReserveAt(cap) succeeded")
	}
	for k := range 3 {
		e, _ := r.ReserveAt(k)
		*e = uint32(k)
	}
	r.CommitN(3)
	if _, ok := r.ReserveAt(13); ok {
		t.Fatal("a 14-item record fit with 13 free")
	}
	if _, ok := r.FrontAt(3); ok {
		t.Fatal("FrontAt(3) of 3 queued succeeded")
	}
	r.ReleaseN(3)

	const records = 5_000
	done := make(chan error, 1)
	go func() {
		for want, spins := uint32(0), 0; want < records; spins++ {
			if spins > 1<<30 {
				done <- errorf("consumer stuck at record %d", want)
				return
			}
			head, ok := r.Front()
			if !ok {
				continue
			}
			n := int(*head >> 16)
			if *head&0xffff != want&0xffff {
				done <- errorf("record %d: head %#x", want, *head)
				return
			}
			for k := 1; k < n; k++ {
				e, ok := r.FrontAt(k)
				if !ok || *e != want<<8|uint32(k) {
					done <- errorf("record %d item %d missing or wrong", want, k)
					return
				}
			}
			r.ReleaseN(n)
			want++
		}
		done <- nil
	}()
	for rec := uint32(0); rec < records; {
		n := int(rec%5) + 1
		e, ok := r.ReserveAt(n - 1)
		if !ok {
			continue
		}
		*e = rec<<8 | uint32(n-1)
		for k := 1; k < n-1; k++ {
			e, _ = r.ReserveAt(k)
			*e = rec<<8 | uint32(k)
		}
		e, _ = r.ReserveAt(0)
		*e = uint32(n)<<16 | rec&0xffff
		r.CommitN(n)
		rec++
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
