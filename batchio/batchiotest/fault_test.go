package batchiotest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/netcode-go/netcode/batchio"
)

// errPerm stands for a second kind of socket error.
var errPerm = errors.New("permission denied")

// memPair returns two conns on a fresh in-memory network.
func memPair(t *testing.T) (a, b *MemConn) {
	t.Helper()
	nw := newMemNet(t, MemConfig{})
	return memListen(t, nw, "10.0.0.1:1"), memListen(t, nw, "10.0.0.2:1")
}

func TestFaultConnConfig(t *testing.T) {
	a, _ := memPair(t)
	for _, cfg := range []FaultConfig{
		{ReadError: -0.1}, {WriteError: 1.5}, {ShortWrite: 0.6, WriteError: 0.6},
		{ReadErrors: []error{nil}},
	} {
		if _, err := NewFaultConn(a, cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	if _, err := NewFaultConn(nil, FaultConfig{}); err == nil {
		t.Error("nil conn accepted")
	}
}

// TestFaultConnSchedule: the injected faults follow the seed (the same
// seed and calls give the same outcome); short writes hand over a proper
// prefix and report it; a failed write returns how many of its prefix went
// out; the counters add up; switched off, the conn is transparent.
func TestFaultConnSchedule(t *testing.T) {
	run := func(seed uint64) ([]string, FaultStats) {
		a, b := memPair(t)
		f, err := NewFaultConn(a, FaultConfig{Seed: seed, ReadError: 0.3, WriteError: 0.2, ShortWrite: 0.3,
			WriteErrors: []error{ErrInjected, errPerm}})
		if err != nil {
			t.Fatal(err)
		}
		var outcomes []string
		sent := 0
		for call := range 200 {
			msgs := patterned(1+call%8, 8, b.LocalAddr())
			n, err := f.WriteBatch(msgs)
			if n < 0 || n > len(msgs) || (err == nil && n == 0) {
				t.Fatalf("call %d: WriteBatch = %d, %v for %d", call, n, err, len(msgs))
			}
			if err != nil && !errors.Is(err, ErrInjected) && !errors.Is(err, errPerm) {
				t.Fatalf("call %d: unexpected error %v", call, err)
			}
			sent += n
			outcomes = append(outcomes, fmt.Sprint(n, err))
			// Whatever was reported sent arrived, as a prefix, in order.
			in := batchio.NewMessages(8, 64)
			got, _ := b.ReadBatch(in)
			if got != n {
				t.Fatalf("call %d: reported %d sent, %d arrived", call, n, got)
			}
			for i := range got {
				if in[i].Buf[0] != byte(i*31) {
					t.Fatalf("call %d: datagram %d starts %d", call, i, in[i].Buf[0])
				}
			}
		}
		// Reads: the data stays put across injected read errors.
		if _, err := b.WriteBatch(patterned(1, 8, f.LocalAddr())); err != nil {
			t.Fatal(err)
		}
		for range 100 {
			n, err := f.ReadBatch(batchio.NewMessages(4, 64))
			if err != nil {
				if !errors.Is(err, ErrInjected) {
					t.Fatal(err)
				}
				continue
			}
			if n == 1 {
				if _, err := b.WriteBatch(patterned(1, 8, f.LocalAddr())); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Fatalf("ReadBatch = %d with one datagram waiting", n)
		}
		s := f.Stats()
		total := 0
		for call := range 200 {
			total += 1 + call%8
		}
		if s.WriteCalls != 200 || s.ReadCalls != 100 || uint64(total-sent) != s.Failed+s.Cut {
			t.Fatalf("stats %+v: %d of %d sent", s, sent, total)
		}
		if s.ReadErrors == 0 || s.WriteErrors == 0 || s.ShortWrites == 0 {
			t.Fatalf("schedule injected nothing of some kind: %+v", s)
		}
		// Off: every write goes out whole, every read reads.
		f.SetEnabled(false)
		for range 50 {
			if n, err := f.WriteBatch(patterned(8, 8, b.LocalAddr())); n != 8 || err != nil {
				t.Fatalf("disabled: WriteBatch = %d, %v", n, err)
			}
			if n, err := b.ReadBatch(batchio.NewMessages(8, 64)); n != 8 || err != nil {
				t.Fatalf("disabled: ReadBatch = %d, %v", n, err)
			}
			if n, err := f.ReadBatch(batchio.NewMessages(8, 64)); n != 1 || err != nil {
				t.Fatalf("disabled: ReadBatch = %d, %v", n, err)
			}
			if _, err := b.WriteBatch(patterned(1, 8, f.LocalAddr())); err != nil {
				t.Fatal(err)
			}
		}
		if s2 := f.Stats(); s2.ReadErrors != s.ReadErrors || s2.WriteErrors != s.WriteErrors || s2.ShortWrites != s.ShortWrites {
			t.Fatalf("faults while disabled: %+v then %+v", s, s2)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := a.ReadBatch(batchio.NewMessages(1, 64)); !errors.Is(err, batchio.ErrClosed) {
			t.Fatalf("Close did not close the wrapped conn: %v", err)
		}
		return outcomes, s
	}
	o1, s1 := run(42)
	o2, s2 := run(42)
	o3, _ := run(43)
	if !slices.Equal(o1, o2) || s1 != s2 {
		t.Fatal("same seed, different faults")
	}
	if slices.Equal(o1, o3) {
		t.Fatal("different seeds, same faults")
	}
	t.Logf("seed 42: %+v", s1)
}
