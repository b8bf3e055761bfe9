// Package ring has the fixed-capacity structures the engine uses instead of
// growing containers: the per-session replay window and power-of-two rings
// for packet queues and for handing work between goroutines.
package ring
