package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// BuildInfo is what the binary knows of its own build.
type BuildInfo struct {
	// Version is the main module's version: a tag or pseudo-version with
	// go install, "(devel)" for a build from a checkout.
	Version string
	// Revision is the VCS commit ("unknown" when the build had no VCS
	// information), with "-modified" for uncommitted changes.
	Revision string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Build reads the binary's build information.
func Build() BuildInfo {
	b := BuildInfo{Version: "unknown", Revision: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		b.GoVersion = bi.GoVersion
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && b.Revision != "unknown" {
		b.Revision += "-modified"
	}
	return b
}

// Line is the -version output: "netcode-server (devel) revision 1a2b3c...
// go1.26.0".
func (b BuildInfo) Line(cmd string) string {
	return fmt.Sprintf("%s %s revision %s %s", cmd, b.Version, b.Revision, b.GoVersion)
}
