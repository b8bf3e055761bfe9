//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// runDelay returns how long the threads of this process have waited,
// runnable, for a CPU (the second field of each thread's
// /proc/self/task/*/schedstat, in nanoseconds), or -1 where the kernel
// does not tell. Over a window it shows how much of the time other
// processes held the cores a benchmark was pinned to. (Threads that
// exited take their share with them; the Go runtime rarely ends any.)
func runDelay() int64 {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return -1
	}
	var total int64
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "schedstat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			return -1
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return -1
		}
		total += v
	}
	return total
}
