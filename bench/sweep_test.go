package bench

import "testing"

// TestSweepFindsThreshold drives sweeps against a fake whose steps are
// sustained up to a threshold: the best value found is sustained, and the
// failed bound is within the resolution above it.
func TestSweepFindsThreshold(t *testing.T) {
	tests := []struct {
		name      string
		sw        Sweep
		threshold float64
		wantBest  float64 // 0: check the resolution only
		wantSteps int     // 0: do not check
	}{
		{"rate up", Sweep{Start: 60}, 1000, 0, 0},
		{"rate down", Sweep{Start: 60, Min: 1}, 7, 0, 0},
		{"players", Sweep{Start: 256, Min: 1, Max: 16384, Integer: true, Resolution: 1.05}, 3000, 0, 0},
		{"players capped", Sweep{Start: 256, Max: 1000, Integer: true}, 1e9, 1000, 3},          // 256, 512, 1000
		{"one player fails", Sweep{Start: 1, Min: 1, Integer: true}, 0.5, 0, 1},                // nothing below 1
		{"exact players", Sweep{Start: 4, Min: 1, Integer: true, Resolution: 1.0001}, 5, 5, 0}, // 4, 8, 6, 5
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sw := tt.sw
			if err := sw.Check(); err != nil {
				t.Fatal(err)
			}
			steps := 0
			for v, ok := sw.Next(); ok; v, ok = sw.Next() {
				if sw.Integer && v != float64(int(v)) {
					t.Fatalf("step %d: %g is not whole", steps, v)
				}
				if sw.Max != 0 && v > sw.Max {
					t.Fatalf("step %d: %g above Max %g", steps, v, sw.Max)
				}
				sw.Record(v, v <= tt.threshold)
				steps++
				if steps > 14 {
					t.Fatal("more than 14 steps")
				}
			}
			best, ok := sw.Best()
			if tt.threshold < 1 && tt.sw.Integer {
				if ok {
					t.Fatalf("best %g; want none", best)
				}
			} else {
				if !ok || best > tt.threshold {
					t.Fatalf("best %g (%v); want a sustained value <= %g", best, ok, tt.threshold)
				}
				if bad, failed := sw.Failed(); failed {
					res := sw.Resolution
					if res == 0 {
						res = 1.1
					}
					if bad <= tt.threshold || (bad/best > res && bad-best > 1) {
						t.Fatalf("bounds %g..%g around %g; want within %g", best, bad, tt.threshold, res)
					}
				}
			}
			if tt.wantBest != 0 && best != tt.wantBest {
				t.Fatalf("best %g; want %g", best, tt.wantBest)
			}
			if tt.wantSteps != 0 && steps != tt.wantSteps {
				t.Fatalf("%d steps; want %d", steps, tt.wantSteps)
			}
		})
	}
}

func TestSweepMaxSteps(t *testing.T) {
	sw := Sweep{Start: 1, MaxSteps: 3}
	n := 0
	for v, ok := sw.Next(); ok; v, ok = sw.Next() {
		sw.Record(v, true)
		n++
	}
	if n != 3 {
		t.Fatalf("%d steps; want 3", n)
	}
	if best, _ := sw.Best(); best != 4 {
		t.Fatalf("best %g; want 4 (1, 2, 4)", best)
	}
}

func TestSweepCheck(t *testing.T) {
	for _, sw := range []Sweep{{}, {Start: -1}, {Start: 10, Max: 5}, {Start: 1, Min: 2}, {Start: 1, Resolution: 1}, {Start: 1, MaxSteps: -1}} {
		if err := sw.Check(); err == nil {
			t.Errorf("%+v accepted", sw)
		}
	}
}
