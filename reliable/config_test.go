package reliable_test

import (
	"math"
	"strings"
	"testing"

	"github.com/netcode-go/netcode/reliable"
)

func TestDefaultConfigIsTheCLibrarys(t *testing.T) {
	c := reliable.DefaultConfig()
	want := reliable.Config{16384, 1024, 1024, 16, 256, 256, 256, 64, 0.0025, 512, 0.1, 0.1, 28}
	if c != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		field  string // "" when valid
		change func(*reliable.Config)
	}{
		{"", func(c *reliable.Config) {}},
		{"", func(c *reliable.Config) { c.MaxFragments = 256; c.FragmentSize = 1 }},
		{"", func(c *reliable.Config) { c.PacketHeaderSize = 0 }},
		{"", func(c *reliable.Config) { c.RTTSmoothingFactor = 1 }},
		// Accepted as the C library does: Send refuses what does not fit.
		{"", func(c *reliable.Config) { c.MaxFragments = 1 }},
		{"MaxPacketSize", func(c *reliable.Config) { c.MaxPacketSize = 0 }},
		{"MaxPacketSize", func(c *reliable.Config) { c.MaxPacketSize = 1<<24 + 1 }},
		{"FragmentAbove", func(c *reliable.Config) { c.FragmentAbove = -1 }},
		{"FragmentSize", func(c *reliable.Config) { c.FragmentSize = 0 }},
		{"MaxFragments", func(c *reliable.Config) { c.MaxFragments = 0 }},
		{"MaxFragments", func(c *reliable.Config) { c.MaxFragments = 257 }},
		{"AckBufferSize", func(c *reliable.Config) { c.AckBufferSize = 0 }},
		{"SentPacketsBufferSize", func(c *reliable.Config) { c.SentPacketsBufferSize = 65537 }},
		{"ReceivedPacketsBufferSize", func(c *reliable.Config) { c.ReceivedPacketsBufferSize = 0 }},
		{"FragmentReassemblyBufferSize", func(c *reliable.Config) { c.FragmentReassemblyBufferSize = 0 }},
		{"RTTHistorySize", func(c *reliable.Config) { c.RTTHistorySize = 0 }},
		{"PacketHeaderSize", func(c *reliable.Config) { c.PacketHeaderSize = -1 }},
		{"RTTSmoothingFactor", func(c *reliable.Config) { c.RTTSmoothingFactor = float32(math.NaN()) }},
		{"PacketLossSmoothingFactor", func(c *reliable.Config) { c.PacketLossSmoothingFactor = -0.1 }},
		{"BandwidthSmoothingFactor", func(c *reliable.Config) { c.BandwidthSmoothingFactor = 1.5 }},
	}
	for _, tt := range tests {
		c := reliable.DefaultConfig()
		tt.change(&c)
		err := c.Validate()
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%+v: %v", c, err)
		case tt.field != "" && err == nil:
			t.Errorf("%s: invalid value accepted", tt.field)
		case tt.field != "" && (!strings.Contains(err.Error(), "Config."+tt.field+" ") || !strings.Contains(err.Error(), " to ")):
			t.Errorf("%s: error %q does not name the field and its range", tt.field, err)
		}
		if tt.field != "" {
			if _, err := reliable.New(c, nil); err == nil {
				t.Errorf("%s: New accepted an invalid config", tt.field)
			}
		}
	}
}

func TestNamesAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for r := reliable.DropReason(0); r < reliable.NumDropReasons; r++ {
		s := r.String()
		if s == "unknown" || s == "" || seen[s] {
			t.Errorf("DropReason(%d).String() = %q", r, s)
		}
		seen[s] = true
	}
	if reliable.NumDropReasons.String() != "unknown" {
		t.Error("out-of-range DropReason has a name")
	}
	for c := reliable.Counter(0); c < reliable.NumCounters; c++ {
		s := c.String()
		if s == "unknown" || seen[s] {
			t.Errorf("Counter(%d).String() = %q", c, s)
		}
		seen[s] = true
	}
	if reliable.NumCounters != 11 || reliable.NumCounters.String() != "unknown" {
		t.Error("want the C library's 11 counters")
	}
}
