package bench

import (
	"fmt"
	"math"
)

// Sweep searches for the largest value of a load parameter (a per-client
// rate, a number of players) at which a measured step is sustained: it
// doubles from Start until a step fails or Max is reached, halves instead
// if the first step fails, then bisects between the highest sustained and
// the lowest failed value until they are close. A Sweep is driven by its
// caller: Next gives the value to try, Record its outcome. It measures
// nothing itself, so its logic is tested with a fake.
type Sweep struct {
	// Start is the first value tried; Min and Max bound the search (Max
	// 0: none). A sweep whose first step fails halves down to Min.
	Start, Min, Max float64
	// Resolution ends the bisection when failed/sustained <= Resolution
	// (default 1.1).
	Resolution float64
	// Integer rounds every value to a whole number (players), and ends
	// the bisection when no whole number lies between the two bounds.
	Integer bool
	// MaxSteps bounds the steps (default 14).
	MaxSteps int

	good, bad float64 // highest sustained, lowest failed (0: none yet)
	next      float64
	steps     int
	done      bool
}

// Check validates the settings.
func (s *Sweep) Check() error {
	if s.Start <= 0 || s.Min < 0 || s.Start < s.Min || (s.Max != 0 && s.Start > s.Max) || math.IsNaN(s.Start) {
		return fmt.Errorf("bench: sweep from %g within [%g, %g]; want 0 < Min <= Start <= Max (Max 0: no bound)", s.Start, s.Min, s.Max)
	}
	if s.Resolution != 0 && s.Resolution <= 1 {
		return fmt.Errorf("bench: sweep resolution %g; want more than 1 (0 means 1.1)", s.Resolution)
	}
	if s.MaxSteps < 0 {
		return fmt.Errorf("bench: sweep of %d steps; want at least 1 (0 means 14)", s.MaxSteps)
	}
	return nil
}

// Next returns the value to measure next, or false when the sweep is over.
func (s *Sweep) Next() (float64, bool) {
	maxSteps := s.MaxSteps
	if maxSteps == 0 {
		maxSteps = 14
	}
	if s.done || s.steps >= maxSteps {
		return 0, false
	}
	if s.steps == 0 {
		s.next = s.round(s.Start)
	}
	return s.next, true
}

// Record files the outcome of the step at v (the value Next returned)
// and chooses the next value.
func (s *Sweep) Record(v float64, sustained bool) {
	s.steps++
	if sustained {
		s.good = max(s.good, v)
	} else if s.bad == 0 || v < s.bad {
		s.bad = v
	}
	res := s.Resolution
	if res == 0 {
		res = 1.1
	}
	switch {
	case s.bad == 0: // every step so far sustained: go up
		if s.Max != 0 && v >= s.Max {
			s.done = true
			return
		}
		s.next = s.round(v * 2)
		if s.Max != 0 {
			s.next = min(s.next, s.Max)
		}
	case s.good == 0: // every step failed: go down
		next := s.round(v / 2)
		if next < max(s.Min, 1e-9) || next >= v {
			s.done = true
			return
		}
		s.next = next
	default:
		mid := s.round((s.good + s.bad) / 2)
		if s.bad/s.good <= res || mid <= s.good || mid >= s.bad {
			s.done = true
			return
		}
		s.next = mid
	}
}

func (s *Sweep) round(v float64) float64 {
	if s.Integer {
		return math.Floor(v)
	}
	return v
}

// Best returns the highest sustained value, or false if no step was.
func (s *Sweep) Best() (float64, bool) { return s.good, s.good > 0 }

// Failed returns the lowest failed value, or false if none failed.
func (s *Sweep) Failed() (float64, bool) { return s.bad, s.bad > 0 }
