package batchiotest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (f *fakeClock) now() time.Time          { return f.t }
func (f *fakeClock) advance(d time.Duration) { f.t = f.t.Add(d) }

// simRig is a SimConn sending from one MemConn to another.
type simRig struct {
	sim  *SimConn
	src  *MemConn
	dst  *MemConn
	in   []batchio.Message
	out  []batchio.Message
	next uint32
}

func newSimRig(t testing.TB, cfg SimConfig, now func() time.Time) *simRig {
	t.Helper()
	nw := newMemNet(t, MemConfig{InboxSize: 1 << 16})
	r := &simRig{
		src: memListen(t, nw, "10.0.0.1:1"),
		dst: memListen(t, nw, "10.0.0.2:2"),
		in:  batchio.NewMessages(64, 64),
		out: batchio.NewMessages(64, 64),
	}
	var err error
	if r.sim, err = NewSimConn(r.src, cfg, now); err != nil {
		t.Fatal(err)
	}
	return r
}

// send writes count numbered datagrams through the simulator.
func (r *simRig) send(t testing.TB, count int) {
	t.Helper()
	for count > 0 {
		k := min(count, len(r.out))
		for i := range k {
			binary.BigEndian.PutUint32(r.out[i].Buf, r.next)
			r.out[i].N, r.out[i].Addr = 4, r.dst.LocalAddr()
			r.next++
		}
		if n, err := r.sim.WriteBatch(r.out[:k]); n != k || err != nil {
			t.Fatalf("WriteBatch = %d, %v", n, err)
		}
		count -= k
	}
}

// flush lets the simulator send what is due (ReadBatch with no room reads
// nothing) and returns the sequence numbers that arrived.
func (r *simRig) flush(t testing.TB) []uint32 {
	t.Helper()
	if _, err := r.sim.ReadBatch(nil); err != nil {
		t.Fatal(err)
	}
	var got []uint32
	for {
		n, err := r.dst.ReadBatch(r.in)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return got
		}
		for _, m := range r.in[:n] {
			got = append(got, binary.BigEndian.Uint32(m.Buf))
		}
	}
}

func TestSimConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  SimConfig
		want string // "" for a good config
	}{
		{"zero", SimConfig{}, ""},
		{"full", SimConfig{Latency: time.Second, Jitter: 2 * time.Second, Loss: 1, Duplicate: 1, MaxQueued: 10, MaxDatagram: 65535}, ""},
		{"negative latency", SimConfig{Latency: -1}, "latency"},
		{"negative jitter", SimConfig{Jitter: -1}, "jitter"},
		{"huge jitter", SimConfig{Jitter: math.MaxInt64}, "jitter"},
		{"negative loss", SimConfig{Loss: -0.1}, "loss"},
		{"loss above 1", SimConfig{Loss: 1.5}, "loss"},
		{"NaN loss", SimConfig{Loss: math.NaN()}, "loss"},
		{"duplicate above 1", SimConfig{Duplicate: 2}, "duplicate"},
		{"NaN duplicate", SimConfig{Duplicate: math.NaN()}, "duplicate"},
		{"negative max queued", SimConfig{MaxQueued: -1}, "max queued"},
		{"negative max datagram", SimConfig{MaxDatagram: -1}, "max datagram"},
	}
	nw := newMemNet(t, MemConfig{})
	inner := memListen(t, nw, "10.0.0.1:1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			_, newErr := NewSimConn(inner, tt.cfg, nil)
			if tt.want == "" {
				if err != nil || newErr != nil {
					t.Fatalf("Validate = %v, NewSimConn = %v; want no error", err, newErr)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v; want an error about %s", err, tt.want)
			}
			if newErr == nil {
				t.Fatal("NewSimConn accepted the config")
			}
		})
	}
	// Every problem is reported, not just the first.
	err := SimConfig{Latency: -1, Loss: 2}.Validate()
	if err == nil || !strings.Contains(err.Error(), "latency") || !strings.Contains(err.Error(), "loss") {
		t.Errorf("Validate = %v; want both problems", err)
	}
	if _, err := NewSimConn(nil, SimConfig{}, nil); err == nil {
		t.Error("NewSimConn accepted a nil conn")
	}
}

func TestSimLossRate(t *testing.T) {
	const count = 20000
	for _, loss := range []float64{0, 0.01, 0.1, 0.5, 1} {
		t.Run(fmt.Sprint(loss), func(t *testing.T) {
			clock := newFakeClock()
			r := newSimRig(t, SimConfig{Loss: loss, Seed: 7}, clock.now)
			r.send(t, count)
			got := len(r.flush(t))
			// Binomial standard deviation is at most 71 packets here; allow
			// about five.
			if want := count * (1 - loss); math.Abs(float64(got)-want) > 350 {
				t.Fatalf("delivered %d of %d at loss %v; want about %.0f", got, count, loss, want)
			}
			if s := r.sim.Stats(); s.Lost+uint64(got) != count || s.Accepted != count || s.Sent != uint64(got) {
				t.Fatalf("stats %+v with %d delivered", s, got)
			}
		})
	}
}

func TestSimDuplicates(t *testing.T) {
	const count, dup = 20000, 0.2
	clock := newFakeClock()
	r := newSimRig(t, SimConfig{Duplicate: dup, Latency: 5 * time.Millisecond, Jitter: 5 * time.Millisecond, Seed: 3, MaxQueued: 2 * count}, clock.now)
	r.send(t, count)
	clock.advance(10 * time.Millisecond)
	seen := make(map[uint32]int)
	for _, seq := range r.flush(t) {
		seen[seq]++
	}
	twice := 0
	for seq, n := range seen {
		if n > 2 || seq >= count {
			t.Fatalf("datagram %d arrived %d times", seq, n)
		}
		if n == 2 {
			twice++
		}
	}
	if len(seen) != count {
		t.Fatalf("%d distinct datagrams arrived, want all %d", len(seen), count)
	}
	if want := count * dup; math.Abs(float64(twice)-want) > 300 {
		t.Fatalf("%d duplicated, want about %.0f", twice, want)
	}
	if s := r.sim.Stats(); s.Duplicated != uint64(twice) {
		t.Fatalf("Duplicated = %d, but %d arrived twice", s.Duplicated, twice)
	}
}

// TestSimLatency sends one datagram per millisecond of fake time and checks
// that each arrives within [Latency-Jitter, Latency+Jitter] of its sending,
// never earlier.
func TestSimLatency(t *testing.T) {
	for _, tt := range []struct {
		latency, jitter time.Duration
	}{{50 * time.Millisecond, 0}, {50 * time.Millisecond, 20 * time.Millisecond}, {5 * time.Millisecond, 10 * time.Millisecond}} {
		t.Run(fmt.Sprintf("%v±%v", tt.latency, tt.jitter), func(t *testing.T) {
			clock := newFakeClock()
			r := newSimRig(t, SimConfig{Latency: tt.latency, Jitter: tt.jitter, Seed: 11}, clock.now)
			const count = 500
			sentAt := make([]time.Duration, count)
			var elapsed time.Duration
			arrived, reordered := 0, false
			last := int64(-1)
			for step := 0; arrived < count && step < count+1000; step++ {
				if step < count {
					sentAt[step] = elapsed
					r.send(t, 1)
				}
				for _, seq := range r.flush(t) {
					delay := elapsed - sentAt[seq]
					if delay < max(tt.latency-tt.jitter, 0) || delay > tt.latency+tt.jitter {
						t.Fatalf("datagram %d arrived after %v, want %v±%v", seq, delay, tt.latency, tt.jitter)
					}
					if int64(seq) < last {
						reordered = true
					}
					last = int64(seq)
					arrived++
				}
				clock.advance(time.Millisecond)
				elapsed += time.Millisecond
			}
			if arrived != count {
				t.Fatalf("%d of %d arrived", arrived, count)
			}
			if reordered != (tt.jitter > time.Millisecond) {
				t.Fatalf("reordered = %v with jitter %v", reordered, tt.jitter)
			}
		})
	}
}

// TestSimWaitReadSends checks, on the real clock, that an idle owner
// parked in WaitRead still sends a delayed datagram on time.
func TestSimWaitReadSends(t *testing.T) {
	const latency = 30 * time.Millisecond
	r := newSimRig(t, SimConfig{Latency: latency}, nil)
	start := time.Now()
	r.send(t, 1)
	// A deadline before the datagram is due: nothing is sent.
	if err := r.sim.WaitRead(start.Add(5 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n, _ := r.dst.ReadBatch(r.in); n != 0 {
		t.Fatal("sent before its latency")
	}
	if err := r.sim.WaitRead(start.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	if waited < latency-5*time.Millisecond || waited > time.Second {
		t.Fatalf("WaitRead returned after %v with a datagram due after %v", waited, latency)
	}
	if n, _ := r.dst.ReadBatch(r.in); n != 1 {
		t.Fatalf("WaitRead returned but %d datagrams arrived", n)
	}
	if s := r.sim.Stats(); s.Sent != 1 || s.Queued != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// simLog runs a lossy, jittery, duplicating link on a fake clock and
// records what arrived when.
func simLog(t *testing.T, seed uint64) []string {
	clock := newFakeClock()
	r := newSimRig(t, SimConfig{Latency: 10 * time.Millisecond, Jitter: 8 * time.Millisecond, Loss: 0.2, Duplicate: 0.1, Seed: seed}, clock.now)
	var log []string
	for step := range 300 {
		if step < 200 {
			r.send(t, 1+step%5)
		}
		for _, seq := range r.flush(t) {
			log = append(log, fmt.Sprint(step, ":", seq))
		}
		clock.advance(time.Millisecond)
	}
	return log
}

func TestSimDeterministic(t *testing.T) {
	a, b, c := simLog(t, 1), simLog(t, 1), simLog(t, 2)
	if len(a) < 400 {
		t.Fatalf("only %d deliveries logged", len(a))
	}
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave different deliveries")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds gave the same deliveries")
	}
}

func TestSimQueueBound(t *testing.T) {
	clock := newFakeClock()
	r := newSimRig(t, SimConfig{Latency: time.Second, MaxQueued: 10}, clock.now)
	r.send(t, 25)
	if s := r.sim.Stats(); s.QueueFull != 15 || s.Queued != 10 {
		t.Fatalf("stats %+v; want 15 dropped and 10 queued", s)
	}
	if got := r.flush(t); len(got) != 0 {
		t.Fatalf("%d sent before their latency", len(got))
	}
	clock.advance(time.Second)
	got := r.flush(t)
	if !slices.Equal(got, []uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("delivered %v; want the first ten in order", got)
	}
	if s := r.sim.Stats(); s.Queued != 0 || s.Sent != 10 {
		t.Fatalf("stats %+v", s)
	}
	// Entries are reused: the queue takes ten more.
	r.send(t, 10)
	clock.advance(time.Second)
	if got := r.flush(t); len(got) != 10 {
		t.Fatalf("delivered %d of the second ten", len(got))
	}
}

func TestSimInvalidAndClose(t *testing.T) {
	r := newSimRig(t, SimConfig{Latency: time.Hour, MaxDatagram: 10}, nil)
	bad := []batchio.Message{
		{Buf: make([]byte, 11), N: 11, Addr: r.dst.LocalAddr()},
		{Buf: make([]byte, 4), N: 0, Addr: r.dst.LocalAddr()},
		{Buf: make([]byte, 4), N: 5, Addr: r.dst.LocalAddr()},
	}
	if n, err := r.sim.WriteBatch(bad); n != 0 || err != nil {
		t.Fatalf("WriteBatch = %d, %v; want none accepted", n, err)
	}
	if s := r.sim.Stats(); s.Invalid != 3 || s.Accepted != 0 {
		t.Fatalf("stats %+v", s)
	}
	if r.sim.LocalAddr() != r.src.LocalAddr() {
		t.Fatalf("LocalAddr %v", r.sim.LocalAddr())
	}

	r.send(t, 1) // due in an hour: WaitRead must wait on the inner conn
	done := waitErr(r.sim, time.Time{})
	time.Sleep(10 * time.Millisecond)
	r.sim.Close()
	select {
	case err := <-done:
		if !errors.Is(err, batchio.ErrClosed) {
			t.Fatalf("WaitRead = %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not wake WaitRead")
	}
	if _, err := r.sim.WriteBatch(r.out[:1]); !errors.Is(err, batchio.ErrClosed) {
		t.Errorf("WriteBatch after Close = %v", err)
	}
	if _, err := r.sim.ReadBatch(r.in); !errors.Is(err, batchio.ErrClosed) {
		t.Errorf("ReadBatch after Close = %v", err)
	}
}

func TestSimAllocs(t *testing.T) {
	clock := newFakeClock()
	r := newSimRig(t, SimConfig{Latency: 5 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: 0.1, Duplicate: 0.1}, clock.now)
	out := patterned(16, 64, r.dst.LocalAddr())
	step := func() {
		if _, err := r.sim.WriteBatch(out); err != nil {
			t.Fatal(err)
		}
		clock.advance(10 * time.Millisecond)
		if _, err := r.sim.ReadBatch(nil); err != nil {
			t.Fatal(err)
		}
		if _, err := r.dst.ReadBatch(r.in); err != nil {
			t.Fatal(err)
		}
	}
	// Warm up until the queue has grown to the most a step can hold (16
	// datagrams, each possibly duplicated); AllocsPerRun rounds down.
	for range 100 {
		step()
	}
	allocs := testing.AllocsPerRun(200, step)
	if allocs != 0 {
		t.Errorf("%v allocations per simulated write and delivery of 16 datagrams, want 0", allocs)
	}
}
