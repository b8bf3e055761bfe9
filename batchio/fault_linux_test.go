//go:build linux

package batchio

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Fault injection: the system-call hooks (hooks_linux_test.go) make the
// socket see the errors and short sends of a loaded kernel.
// (batchiotest.FaultConn does the same for any Conn.)

// numbered returns count datagrams to addr whose first byte is their index.
func numbered(count int, addr netip.AddrPort) []Message {
	out := makeMsgs(count, 32)
	for i := range out {
		out[i].N = 1 + i%32
		out[i].Addr = addr
		for j := range out[i].N {
			out[i].Buf[j] = byte(i)
		}
	}
	return out
}

// receivedIndices reads what b has (at most want datagrams, waiting up to
// a second), checks each is intact and returns their indices in arrival
// order. It then checks that nothing more is waiting.
func receivedIndices(t *testing.T, b *mmsgConn, want int) []int {
	t.Helper()
	var idx []int
	for _, m := range readAll(t, b, makeMsgs(8, 64), want) {
		i := int(m.Buf[0])
		if m.N != 1+i%32 {
			t.Fatalf("datagram %d is %d bytes, want %d", i, m.N, 1+i%32)
		}
		for _, c := range m.Buf[:m.N] {
			if int(c) != i {
				t.Fatalf("datagram %d corrupted: %x", i, m.Buf[:m.N])
			}
		}
		idx = append(idx, i)
	}
	// Loopback delivery is done when sendmmsg returns: anything more would
	// already be here.
	if n, err := b.ReadBatch(makeMsgs(8, 64)); n != 0 || err != nil {
		t.Fatalf("%d more datagrams than expected (err %v)", n, err)
	}
	return idx
}

// without returns 0..count-1 minus drop.
func without(count int, drop ...int) []int {
	var out []int
	for i := range count {
		if !slices.Contains(drop, i) {
			out = append(out, i)
		}
	}
	return out
}

// failOn returns a send hook under which datagram bad fails with errno the
// way the kernel fails it: at the head of a call the call fails; further
// back the call sends the datagrams before it and stops. tries counts the
// calls that had it at the head; fail(try) says whether that try fails.
func failOn(bad int, errno syscall.Errno, tries *int, fail func(try int) bool) func(int, func(int) []byte) (int, syscall.Errno) {
	return func(count int, datagram func(int) []byte) (int, syscall.Errno) {
		for i := range count {
			if int(datagram(i)[0]) != bad {
				continue
			}
			if i > 0 {
				return i, 0
			}
			*tries++
			if fail(*tries) {
				return 0, errno
			}
			break
		}
		return 0, 0
	}
}

func always(int) bool { return true }

func TestFaultSendTransientRetried(t *testing.T) {
	for _, mode := range waitModes {
		for _, errno := range []syscall.Errno{unix.EINTR, unix.EAGAIN, unix.ENOBUFS} {
			t.Run(fmt.Sprintf("%v/%v", mode, errno), func(t *testing.T) {
				// Datagram 3 fails sendRetries times in a row, then the
				// kernel takes it: nothing is lost.
				a, b := listenPair(t, "127.0.0.1:0", Config{BlockingWait: bool(mode), BatchSize: 4, DisableGSO: true})
				tries := 0
				a.setSysHooks(sysHooks{send: failOn(3, errno, &tries, func(try int) bool { return try <= sendRetries })})
				const count = 10
				if n, err := a.WriteBatch(numbered(count, b.LocalAddr())); n != count || err != nil {
					t.Fatalf("WriteBatch = %d, %v; want %d sent", n, err, count)
				}
				if got := receivedIndices(t, b, count); !slices.Equal(got, without(count)) {
					t.Fatalf("received %v", got)
				}
				if s := a.Stats(); s.SendRetries != sendRetries || s.SendDropped != 0 || s.SendPackets != count {
					t.Fatalf("stats %+v; want %d retries, 0 dropped, %d sent", s, sendRetries, count)
				}
			})
			t.Run(fmt.Sprintf("%v/%v/persistent", mode, errno), func(t *testing.T) {
				// Datagram 5 never goes: it is tried 1+sendRetries times,
				// then dropped, and the ones behind it are sent in order.
				a, b := listenPair(t, "127.0.0.1:0", Config{BlockingWait: bool(mode), BatchSize: 4, DisableGSO: true})
				tries := 0
				a.setSysHooks(sysHooks{send: failOn(5, errno, &tries, always)})
				const count = 10
				if n, err := a.WriteBatch(numbered(count, b.LocalAddr())); n != count-1 || err != nil {
					t.Fatalf("WriteBatch = %d, %v; want %d sent", n, err, count-1)
				}
				if tries != 1+sendRetries {
					t.Fatalf("datagram 5 tried %d times, want %d", tries, 1+sendRetries)
				}
				if got := receivedIndices(t, b, count-1); !slices.Equal(got, without(count, 5)) {
					t.Fatalf("received %v", got)
				}
				if s := a.Stats(); s.SendRetries != sendRetries || s.SendDropped != 1 || s.SendPackets != count-1 {
					t.Fatalf("stats %+v; want %d retries, 1 dropped, %d sent", s, sendRetries, count-1)
				}
			})
		}
	}
}

// TestFaultSendNeverSucceeds: a socket that always says ENOBUFS costs a
// bounded number of calls per datagram and WriteBatch returns.
func TestFaultSendNeverSucceeds(t *testing.T) {
	for _, mode := range waitModes {
		a, b := listenPair(t, "127.0.0.1:0", Config{BlockingWait: bool(mode), BatchSize: 8, DisableGSO: true})
		calls := 0
		a.setSysHooks(sysHooks{send: func(int, func(int) []byte) (int, syscall.Errno) {
			calls++
			return 0, unix.ENOBUFS
		}})
		const count = 20
		if n, err := a.WriteBatch(numbered(count, b.LocalAddr())); n != 0 || err != nil {
			t.Fatalf("%v: WriteBatch = %d, %v; want 0 sent, no error", mode, n, err)
		}
		if calls != count*(1+sendRetries) {
			t.Fatalf("%v: %d calls for %d datagrams, want %d", mode, calls, count, count*(1+sendRetries))
		}
		if s := a.Stats(); s.SendDropped != count || s.SendRetries != count*sendRetries || s.SendPackets != 0 {
			t.Fatalf("%v: stats %+v", mode, s)
		}
		if got := receivedIndices(t, b, 0); len(got) != 0 {
			t.Fatalf("%v: received %v", mode, got)
		}
	}
}

// TestFaultPartialSendmmsg: when sendmmsg takes only part of a batch, the
// rest is sent by the next call, starting exactly where the kernel stopped:
// every datagram arrives once, in order.
func TestFaultPartialSendmmsg(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		a, b := listenPair(t, "127.0.0.1:0", Config{BatchSize: 8, DisableGSO: true})
		rng := rand.New(rand.NewPCG(seed, 0))
		calls, short := 0, 0
		a.setSysHooks(sysHooks{send: func(count int, _ func(int) []byte) (int, syscall.Errno) {
			calls++
			limit := 1 + rng.IntN(count)
			if limit < count {
				short++
			}
			return limit, 0
		}})
		const count = 50
		if n, err := a.WriteBatch(numbered(count, b.LocalAddr())); n != count || err != nil {
			t.Fatalf("seed %d: WriteBatch = %d, %v", seed, n, err)
		}
		if got := receivedIndices(t, b, count); !slices.Equal(got, without(count)) {
			t.Fatalf("seed %d: received %v", seed, got)
		}
		s := a.Stats()
		if short == 0 || s.SendCalls != uint64(calls) || s.SendPackets != count || s.SendDropped != 0 || s.SendRetries != 0 {
			t.Fatalf("seed %d: %d calls (%d short), stats %+v", seed, calls, short, s)
		}
		t.Logf("seed %d: %d datagrams in %d sendmmsg calls, %d of them short", seed, count, calls, short)
	}
}

// TestFaultSendHardError: an error that retrying cannot fix drops only the
// datagram at the head of the call, without retries; the rest go out.
func TestFaultSendHardError(t *testing.T) {
	for _, mode := range waitModes {
		for _, errno := range []syscall.Errno{unix.EPERM, unix.EHOSTUNREACH, unix.EMSGSIZE} {
			// First, last of a chunk, first of the next chunk, last overall.
			for _, bad := range []int{0, 3, 4, 9} {
				a, b := listenPair(t, "127.0.0.1:0", Config{BlockingWait: bool(mode), BatchSize: 4, DisableGSO: true})
				tries := 0
				a.setSysHooks(sysHooks{send: failOn(bad, errno, &tries, always)})
				const count = 10
				if n, err := a.WriteBatch(numbered(count, b.LocalAddr())); n != count-1 || err != nil {
					t.Fatalf("%v %v at %d: WriteBatch = %d, %v", mode, errno, bad, n, err)
				}
				if got := receivedIndices(t, b, count-1); !slices.Equal(got, without(count, bad)) {
					t.Fatalf("%v %v at %d: received %v", mode, errno, bad, got)
				}
				if s := a.Stats(); tries != 1 || s.SendDropped != 1 || s.SendRetries != 0 {
					t.Fatalf("%v %v at %d: tried %d times, stats %+v; want 1 try, 1 dropped, no retries", mode, errno, bad, tries, s)
				}
			}
		}
	}
}

// TestFaultSendSchedule: a seeded mix of transient errors, hard errors and
// short sends. Whatever happens, the datagrams that arrive are a subset in
// order, exactly as many as WriteBatch reports, and every other one is
// counted as dropped.
func TestFaultSendSchedule(t *testing.T) {
	for _, mode := range waitModes {
		for seed := range uint64(5) {
			a, b := listenPair(t, "127.0.0.1:0", Config{BlockingWait: bool(mode), BatchSize: 16, DisableGSO: true})
			rng := rand.New(rand.NewPCG(seed, 7))
			a.setSysHooks(sysHooks{send: func(count int, _ func(int) []byte) (int, syscall.Errno) {
				switch r := rng.IntN(10); {
				case r < 3:
					return 0, []syscall.Errno{unix.EINTR, unix.EAGAIN, unix.ENOBUFS}[r]
				case r < 4:
					return 0, unix.EPERM
				case r < 7:
					return 1 + rng.IntN(count), 0
				}
				return 0, 0
			}})
			const count = 100
			n, err := a.WriteBatch(numbered(count, b.LocalAddr()))
			if err != nil {
				t.Fatal(err)
			}
			got := receivedIndices(t, b, n)
			if len(got) != n || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != n {
				t.Fatalf("%v seed %d: WriteBatch said %d, received %v", mode, seed, n, got)
			}
			if s := a.Stats(); s.SendDropped != uint64(count-n) || s.SendPackets != uint64(n) {
				t.Fatalf("%v seed %d: %d sent, stats %+v", mode, seed, n, s)
			}
		}
	}
}

// TestFaultRecvErrors: EINTR and EAGAIN from the receive call mean "nothing
// now" (0, nil) and lose nothing; any other error is returned, wrapping the
// errno, and the datagrams are still there afterwards.
func TestFaultRecvErrors(t *testing.T) {
	for _, mode := range waitModes {
		a, b := listenPair(t, "127.0.0.1:0", Config{BlockingWait: bool(mode), BatchSize: 8, DisableGSO: true})
		var inject syscall.Errno
		b.setSysHooks(sysHooks{recv: func() syscall.Errno { return inject }})
		const count = 5
		if n, err := a.WriteBatch(numbered(count, b.LocalAddr())); n != count || err != nil {
			t.Fatal(n, err)
		}
		in := makeMsgs(8, 64)
		for _, errno := range []syscall.Errno{unix.EINTR, unix.EAGAIN} {
			inject = errno
			if n, err := b.ReadBatch(in); n != 0 || err != nil {
				t.Fatalf("%v: ReadBatch with %v = %d, %v; want 0, nil", mode, errno, n, err)
			}
		}
		for _, errno := range []syscall.Errno{unix.ENOMEM, unix.ECONNREFUSED} {
			inject = errno
			n, err := b.ReadBatch(in)
			if n != 0 || !errors.Is(err, errno) {
				t.Fatalf("%v: ReadBatch with %v = %d, %v; want the error", mode, errno, n, err)
			}
		}
		inject = 0
		if got := receivedIndices(t, b, count); !slices.Equal(got, without(count)) {
			t.Fatalf("%v: after the errors received %v", mode, got)
		}
		if s := b.Stats(); s.RecvPackets != count {
			t.Fatalf("%v: stats %+v", mode, s)
		}
	}
}
