package metrics_test

import (
	"regexp"
	"testing"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/metrics"
)

// TestReasonNames: every drop reason has a stable snake_case name, unique
// over codec's and the server's; the None reasons have none. Adding a
// reason to codec or engine without naming it here fails this test.
func TestReasonNames(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	seen := make(map[string]string)
	check := func(what, name string) {
		t.Helper()
		switch {
		case name == "":
			t.Errorf("%s has no reason label; add one to metrics' tables", what)
		case !snake.MatchString(name):
			t.Errorf("%s: label %q is not snake_case", what, name)
		case seen[name] != "":
			t.Errorf("%s: label %q is also %s's", what, name, seen[name])
		default:
			seen[name] = what
		}
	}
	for r := codec.DropReason(1); r < codec.NumDropReasons; r++ {
		check("codec."+r.String(), metrics.DropReasonName(r))
	}
	for r := engine.ServerDropReason(1); r < engine.NumServerDropReasons; r++ {
		check("engine."+r.String(), metrics.ServerDropReasonName(r))
	}
	if metrics.DropReasonName(codec.ReasonNone) != "" || metrics.ServerDropReasonName(engine.ServerDropNone) != "" ||
		metrics.DropReasonName(codec.NumDropReasons) != "" || metrics.ServerDropReasonName(engine.NumServerDropReasons) != "" {
		t.Error("a None or out-of-range reason has a label")
	}
	if n := len(seen); n != int(codec.NumDropReasons)-1+int(engine.NumServerDropReasons)-1 {
		t.Errorf("%d names", n)
	}
	// A few names dashboards already use.
	for r, want := range map[codec.DropReason]string{codec.ReasonReplayed: "replayed", codec.ReasonDecrypt: "decrypt_failed"} {
		if got := metrics.DropReasonName(r); got != want {
			t.Errorf("%v: %q; want %q", r, got, want)
		}
	}
	if got := metrics.ServerDropReasonName(engine.ServerDropTokenConsumed); got != "token_consumed" {
		t.Errorf("token consumed: %q", got)
	}
}
