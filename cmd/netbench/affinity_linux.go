//go:build linux

package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// allowedCPUs returns the CPUs this process may run on.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for i := range 1024 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// splitCPUs gives the server the last allowed CPU and the load the others,
// so that the two processes do not steal each other's core. With a single
// CPU both get it.
func splitCPUs() (load, server []int, err error) {
	cpus, err := allowedCPUs()
	if err != nil {
		return nil, nil, err
	}
	if len(cpus) < 2 {
		return cpus, cpus, nil
	}
	return cpus[:len(cpus)-1], cpus[len(cpus)-1:], nil
}

// pinProcess restricts every thread of the process to cpus and sets
// GOMAXPROCS to match. sched_setaffinity applies to one thread, so each
// existing thread is pinned; threads created later inherit the mask of the
// thread that creates them, which is already pinned.
func pinProcess(cpus []int, extraProcs int) error {
	if len(cpus) == 0 {
		return nil
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("pin: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("pin thread %d to cpus %v: %w", tid, cpus, err)
		}
	}
	runtime.GOMAXPROCS(len(cpus) + extraProcs)
	return nil
}
