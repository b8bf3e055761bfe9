//go:build linux

package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

// clockTicks is USER_HZ, the unit of /proc/stat: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// coreBusy returns how long cpus were busy in total, in nanoseconds, by
// anything: user and system time of every process, and interrupts and
// softirqs (/proc/stat: user, nice, system, irq, softirq), or -1 where the
// kernel does not tell. A process's own CPU time misses the kernel work
// done on its core for it outside its context, such as a NAPI thread's
// receive processing or softirqs run while it slept; the core's busy time
// does not.
func coreBusy(cpus []int) int64 {
	if len(cpus) == 0 {
		return -1
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	want := make(map[int]bool, len(cpus))
	for _, c := range cpus {
		want[c] = true
	}
	var ticks int64
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 8 || !bytes.HasPrefix(f[0], []byte("cpu")) || len(f[0]) == 3 {
			continue
		}
		n, err := strconv.Atoi(string(f[0][3:]))
		if err != nil || !want[n] {
			continue
		}
		for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
			v, err := strconv.ParseInt(string(f[i]), 10, 64)
			if err != nil {
				return -1
			}
			ticks += v
		}
		found++
	}
	if found != len(want) {
		return -1
	}
	return ticks * (1e9 / clockTicks)
}
