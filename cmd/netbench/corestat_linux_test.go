//go:build linux

package main

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A thread spinning on a core it is pinned to shows as that core's busy
// time, and an absent core gives -1.
func TestCoreBusy(t *testing.T) {
	cpus, err := allowedCPUs()
	if err != nil || len(cpus) == 0 {
		t.Skipf("no CPU list: %v", err)
	}
	c := cpus[len(cpus)-1]
	if coreBusy([]int{c}) < 0 {
		t.Skip("/proc/stat has no per-CPU lines")
	}
	if got := coreBusy([]int{1 << 20}); got != -1 {
		t.Errorf("coreBusy of an absent CPU = %d, want -1", got)
	}
	done := make(chan int64)
	go func() {
		runtime.LockOSThread() // never unlocked: the pinned thread ends with the goroutine
		var set unix.CPUSet
		set.Set(c)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			done <- -1
			return
		}
		before := coreBusy([]int{c})
		for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		}
		done <- coreBusy([]int{c}) - before
	}()
	busy := <-done
	// 300 ms of spinning, counted in 10 ms ticks: at least half of it,
	// whatever else the machine does.
	if busy < int64(150*time.Millisecond) {
		t.Errorf("core %d busy %v while a thread spun on it for 300ms", c, time.Duration(busy))
	}
}
