package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func vars(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

type testFlags struct {
	n     int
	d     time.Duration
	x     float64
	mode  string
	on    bool
	addrs string
	fs    *FlagSet
}

func newTestFlags() *testFlags {
	f := &testFlags{fs: New("demo sub", "[flags]")}
	f.fs.Int(&f.n, "max-n", 5, 1, 10, "`N`")
	f.fs.Duration(&f.d, "wait", time.Second, time.Second, time.Hour, time.Second, "`D`")
	f.fs.Float(&f.x, "rate", 1, 0, 100, "`HZ`")
	f.fs.Choice(&f.mode, "mode", "a", []string{"a", "b", "c"}, "mode")
	f.fs.Bool(&f.on, "on", false, "on")
	f.fs.HostPort(&f.addrs, "http", "127.0.0.1:1", true, "`ADDR`")
	return f
}

// TestEnvironment: a variable sets a flag the command line did not give;
// the command line wins; an empty variable is unset; -version has none.
func TestEnvironment(t *testing.T) {
	f := newTestFlags()
	env := map[string]string{"NETCODE_MAX_N": "7", "NETCODE_WAIT": "2s", "NETCODE_MODE": "b", "NETCODE_ON": "true",
		"NETCODE_RATE": "", "NETCODE_HTTP": "off", "NETCODE_VERSION": "true"}
	var out bytes.Buffer
	if err := f.fs.Parse([]string{"-mode", "c"}, vars(env), &out); err != nil {
		t.Fatal(err)
	}
	if f.n != 7 || f.d != 2*time.Second || f.mode != "c" || !f.on || f.x != 1 || f.addrs != "" || out.Len() != 0 {
		t.Errorf("got %+v, output %q", *f, out.String())
	}
}

// TestErrors: each bad value names its flag or variable and what is
// allowed, as a UsageError; -h and -version are ErrDone with stdout.
func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-max-n", "11"}, nil, `invalid value "11" for flag -max-n: want an integer from 1 to 10`},
		{[]string{"-wait", "1500ms"}, nil, "-wait: want whole seconds from 1s to 1h0m0s"},
		{[]string{"-rate", "0"}, nil, "-rate: want a number above 0 up to 100"},
		{[]string{"-mode", "d"}, nil, "-mode: want a, b or c"},
		{[]string{"-http", "x"}, nil, "-http: want host:port"},
		{[]string{"-on=2"}, nil, "want true or false"},
		{nil, map[string]string{"NETCODE_MAX_N": "0"}, `NETCODE_MAX_N="0": want an integer from 1 to 10`},
		{nil, map[string]string{"NETCODE_ON": "yes"}, `NETCODE_ON="yes": want true or false`},
	} {
		err := newTestFlags().fs.Parse(tc.args, vars(tc.env), new(bytes.Buffer))
		if !IsUsage(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: %v; want a usage error with %q", tc.args, tc.env, err, tc.want)
		}
	}
	var out bytes.Buffer
	if err := newTestFlags().fs.Parse([]string{"-h"}, vars(nil), &out); !errors.Is(err, ErrDone) ||
		!strings.Contains(out.String(), "usage: demo sub [flags]") || !strings.Contains(out.String(), "-mode a|b|c") ||
		!strings.Contains(out.String(), "(default 5) [$NETCODE_MAX_N]") {
		t.Errorf("-h: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := newTestFlags().fs.Parse([]string{"-version"}, vars(nil), &out); !errors.Is(err, ErrDone) ||
		!strings.HasPrefix(out.String(), "demo ") {
		t.Errorf("-version: %v %q", err, out.String())
	}
}

// TestExit: statuses and what is printed for each class.
func TestExit(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		want string
	}{
		{nil, 0, ""},
		{ErrDone, 0, ""},
		{Usagef("-x: bad"), 2, "demo: -x: bad\n(demo -h lists the flags)\n"},
		{errors.New("disk full"), 1, "demo: disk full\n"},
	} {
		var out bytes.Buffer
		if code := Exit(&out, "demo", tc.err); code != tc.code || out.String() != tc.want {
			t.Errorf("%v: %d %q; want %d %q", tc.err, code, out.String(), tc.code, tc.want)
		}
	}
}
