package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuations joined.
type instruction struct {
	cmd  string // upper-cased
	args []string
}

// stage is a FROM and what follows it.
type stage struct {
	name string
	from string
	ins  []instruction
}

// parseDockerfile reads the instructions of a Dockerfile by stage.
func parseDockerfile(data []byte) ([]stage, error) {
	var stages []stage
	sc := bufio.NewScanner(bytes.NewReader(data))
	var line string
	for sc.Scan() {
		s := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(s, "#") || (s == "" && line == "") {
			continue
		}
		if rest, ok := strings.CutSuffix(s, "\\"); ok {
			line += rest + " "
			continue
		}
		line += s
		f := strings.Fields(line)
		line = ""
		if len(f) == 0 {
			continue
		}
		in := instruction{cmd: strings.ToUpper(f[0]), args: f[1:]}
		if in.cmd == "FROM" {
			st := stage{from: in.args[0]}
			if len(in.args) == 3 && strings.EqualFold(in.args[1], "AS") {
				st.name = in.args[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			return nil, fmt.Errorf("%s before FROM", in.cmd)
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
	}
	return stages, sc.Err()
}

var numericUser = regexp.MustCompile(`^([0-9]+)(:([0-9]+))?$`)

// TestDockerfile: both images run as the numeric non-root user the
// manifests name; the build stage copies only source directories, each
// re-included by the deny-by-default .dockerignore; and those cover every
// package of the repository the two commands are built from, so that the
// build works with the repository's layout.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages, err := parseDockerfile(data)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d:%d", nonRootID, nonRootID)
	var sources []string
	for _, st := range stages {
		var user string
		for _, in := range st.ins {
			switch {
			case in.cmd == "USER":
				user = strings.Join(in.args, " ")
			case in.cmd == "COPY" && !strings.HasPrefix(in.args[0], "--from="):
				sources = append(sources, in.args[:len(in.args)-1]...)
			}
		}
		switch st.name {
		case "build":
		case "netcode-server", "netcode-token":
			if m := numericUser.FindStringSubmatch(user); m == nil || user != want {
				t.Errorf("target %s: USER %q; want %q (numeric, so that the kubelet can verify runAsNonRoot)", st.name, user, want)
			}
		default:
			t.Errorf("stage %q: want build, netcode-server or netcode-token", st.name)
		}
	}
	for _, target := range []string{"netcode-server", "netcode-token"} {
		if !slices.ContainsFunc(stages, func(s stage) bool { return s.name == target }) {
			t.Errorf("no %s target", target)
		}
	}

	ignore, err := os.ReadFile("Dockerfile.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for l := range strings.Lines(string(ignore)) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	if len(patterns) == 0 || patterns[0] != "*" {
		t.Errorf(".dockerignore starts with %q; want * (deny by default: no key or secret in the build context)", patterns[:min(1, len(patterns))])
	}
	for _, src := range sources {
		if src == "." || src == "./" || strings.ContainsAny(src, "*?") {
			t.Errorf("COPY %s: copy named sources, not the whole context", src)
			continue
		}
		if _, err := os.Stat(filepath.Join("..", src)); err != nil {
			t.Errorf("COPY %s: %v (sources are relative to the repository root)", src, err)
		}
		if !slices.Contains(patterns, "!"+src) {
			t.Errorf("COPY %s: the .dockerignore does not re-include it (want !%s)", src, src)
		}
	}

	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool: the packages' coverage is not checked")
	}
	cmd := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", "./cmd/netcode-server", "./cmd/netcode-token")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for dir := range strings.FieldsSeq(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // a module from the cache, fetched by go mod download
		}
		if !slices.ContainsFunc(sources, func(src string) bool {
			return strings.HasPrefix(rel+"/", strings.TrimSuffix(src, "/")+"/")
		}) {
			t.Errorf("package %s is not copied into the build stage", rel)
		}
	}
}

// TestDockerfileRefuses: the user check fails on a user name, as the
// kubelet would.
func TestDockerfileRefuses(t *testing.T) {
	for _, user := range []string{"nonroot:nonroot", "nonroot", "65532:nonroot"} {
		if numericUser.MatchString(user) {
			t.Errorf("USER %s taken as numeric", user)
		}
	}
}
