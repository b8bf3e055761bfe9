package metrics

import "github.com/prometheus/client_golang/prometheus"

// BuildInfoName is the build-information gauge's name.
const BuildInfoName = "netcode_build_info"

// NewBuildInfo returns the netcode_build_info gauge: always 1, with the
// binary's module version, VCS revision and Go version as labels, so a
// dashboard can tell which build each server runs (join on it, or count
// by version during a rollout). Register it once per registry.
func NewBuildInfo(version, revision, goVersion string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        BuildInfoName,
		Help:        "Build information of the running binary; the value is always 1.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion},
	})
	g.Set(1)
	return g
}
