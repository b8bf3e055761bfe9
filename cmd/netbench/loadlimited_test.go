//go:build linux

package main

import (
	"strings"
	"testing"

	"github.com/netcode-go/netcode/bench"
)

func TestLoadLimited(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	step := func(players int, ok bool, sat string) bench.Step {
		return bench.Step{Players: players, Sustained: ok, Saturated: sat, LoadCPURatio: f(0.95), ServerCPURatio: f(0.7)}
	}
	for _, c := range []struct {
		name  string
		steps []bench.Step
		want  string // "" or a part of the reason
	}{
		{"server limited", []bench.Step{step(256, true, "neither"), step(512, true, "neither"), step(1024, false, "server"), step(768, true, "neither")}, ""},
		{"load at the ceiling", []bench.Step{step(256, true, "neither"), step(512, false, "load"), step(512, false, "server")}, "512 players"},
		{"both at the ceiling", []bench.Step{step(256, true, "neither"), step(512, false, "both")}, "512 players"},
		{"load only far above", []bench.Step{step(256, true, "neither"), step(1024, false, "both"), step(512, false, "server"), step(384, true, "load")}, ""},
		{"nothing sustained", []bench.Step{step(256, false, "load")}, "256 players"},
		{"echo rates", []bench.Step{{RateHz: 60, Sustained: true}, {RateHz: 120, Saturated: "load"}}, "120 Hz"},
		{"load dropped on receive", []bench.Step{step(256, true, "neither"), {Players: 512, Saturated: "load", LoadDropped: 9216}}, "9216 datagrams dropped on the load's receive"},
	} {
		got := loadLimited(c.steps)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: loadLimited = %q; want %q", c.name, got, c.want)
		}
	}
}
