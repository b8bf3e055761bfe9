package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/netcode-go/netcode/engine/metrics"
)

// TestBuildInfo: one series, value 1, the three labels, and lint-clean.
func TestBuildInfo(t *testing.T) {
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewBuildInfo("v1.2.3", "0123abcd", "go1.26.0"))
	want := `# HELP netcode_build_info Build information of the running binary; the value is always 1.
# TYPE netcode_build_info gauge
netcode_build_info{goversion="go1.26.0",revision="0123abcd",version="v1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), metrics.BuildInfoName); err != nil {
		t.Error(err)
	}
	problems, err := testutil.GatherAndLint(reg, metrics.BuildInfoName)
	if err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
