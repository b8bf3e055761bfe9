package cli

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestVersionOfBuiltCommands builds both commands and checks that
// -version prints what the binary's build information says (go version
// -m): the module version, the VCS revision (when the build had one) and
// the Go version.
func TestVersionOfBuiltCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the commands; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	dir := t.TempDir()
	for _, cmd := range []string{"netcode-server", "netcode-token"} {
		bin := filepath.Join(dir, cmd)
		build := exec.Command(goTool, "build", "-buildvcs=auto", "-o", bin, "../../"+cmd)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", cmd, err, out)
		}
		meta, err := exec.Command(goTool, "version", "-m", bin).Output()
		if err != nil {
			t.Fatalf("go version -m: %v", err)
		}
		version, revision, modified := "unknown", "unknown", false
		sc := bufio.NewScanner(strings.NewReader(string(meta)))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) >= 3 && f[0] == "mod":
				version = f[2]
			case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
				revision = strings.TrimPrefix(f[1], "vcs.revision=")
			case len(f) == 2 && f[0] == "build" && f[1] == "vcs.modified=true":
				modified = true
			}
		}
		if modified && revision != "unknown" {
			revision += "-modified"
		}
		out, err := exec.Command(bin, "-version").Output()
		if err != nil {
			t.Fatalf("%s -version: %v", cmd, err)
		}
		want := cmd + " " + version + " revision " + revision + " " + runtime.Version() + "\n"
		if string(out) != want {
			t.Errorf("%s -version: %q; want %q (from go version -m:\n%s)", cmd, out, want, meta)
		}
		t.Logf("%s", out)
	}
}

// TestBuildLine: the -version line's form.
func TestBuildLine(t *testing.T) {
	b := BuildInfo{Version: "v1.2.3", Revision: "abc", GoVersion: "go1.26.0"}
	if got := b.Line("netcode-server"); got != "netcode-server v1.2.3 revision abc go1.26.0" {
		t.Errorf("%q", got)
	}
	if b := Build(); b.GoVersion != runtime.Version() || b.Version == "" || b.Revision == "" {
		t.Errorf("Build() = %+v", b)
	}
}
