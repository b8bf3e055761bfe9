// Package cli turns command lines and the environment into configuration
// the same way for every netcode command: each flag also comes from a
// NETCODE_ variable, values are checked against their allowed range as
// they are parsed (so an error names the flag or the variable it came
// from), -h prints the usage to stdout, -version prints the build, and
// errors map to one set of exit statuses.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// EnvPrefix starts every variable: -max-clients is NETCODE_MAX_CLIENTS.
const EnvPrefix = "NETCODE_"

// ErrDone reports that Parse has done what was asked (-h, -version) and the
// command should exit 0.
var ErrDone = errors.New("cli: done")

// FlagSet is a flag.FlagSet whose flags also come from the environment.
// Define flags on its FlagSet (with the helpers of this package for
// checked values), then call Parse.
type FlagSet struct {
	*flag.FlagSet
	cmd      string // the command line's start, such as "netcode-token serve"
	synopsis string
	notes    string
	version  bool
	// placeholders name the value of flags whose usage cannot (choices).
	placeholders map[string]string
}

// New returns a flag set for cmd ("netcode-server", "netcode-token mint").
// synopsis follows the command in the usage line; -version is defined.
func New(cmd, synopsis string) *FlagSet {
	f := &FlagSet{FlagSet: flag.NewFlagSet(cmd, flag.ContinueOnError), cmd: cmd, synopsis: synopsis,
		placeholders: map[string]string{}}
	// The flag package would print errors and the whole usage to its
	// output; Parse reports errors once, and the usage only on -h.
	f.SetOutput(io.Discard)
	f.Usage = func() {}
	f.Bool(&f.version, "version", false, "print the version and exit")
	return f
}

// Notes sets text printed after the flags in the usage.
func (f *FlagSet) Notes(text string) { f.notes = text }

// EnvName is the variable of a flag: NETCODE_ and the name upper-cased,
// dashes as underscores.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// hasEnv reports whether a flag may come from the environment: all but
// -version, which a stray variable must not turn into a silent exit.
func hasEnv(name string) bool { return name != "version" }

// Parse reads args, then the variable of every flag the command line did
// not give (the command line wins; an empty variable is unset). It returns
// ErrDone after printing the usage (-h) or the version (-version) to
// stdout, a UsageError naming the flag or variable for a bad value, or
// nil. Positional arguments are left in Args.
func (f *FlagSet) Parse(args []string, getenv func(string) string, stdout io.Writer) error {
	if err := f.FlagSet.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.PrintUsage(stdout)
			return ErrDone
		}
		return UsageError{err}
	}
	if f.version {
		fmt.Fprintln(stdout, Build().Line(strings.Fields(f.cmd)[0]))
		return ErrDone
	}
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var err error
	f.VisitAll(func(fl *flag.Flag) {
		if err != nil || given[fl.Name] || !hasEnv(fl.Name) {
			return
		}
		name := EnvName(fl.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if serr := fl.Value.Set(v); serr != nil {
			err = Usagef("%s=%q: %v", name, v, serr)
		}
	})
	return err
}

// PrintUsage writes the usage: the synopsis, every flag with its default
// and variable, and the notes.
func (f *FlagSet) PrintUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s %s\n\n", f.cmd, f.synopsis)
	f.VisitAll(func(fl *flag.Flag) {
		name, usage := flag.UnquoteUsage(fl)
		if p, ok := f.placeholders[fl.Name]; ok {
			name = p
		}
		line := "  -" + fl.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if d := fl.DefValue; d != "" && d != "0" && d != "false" && d != "[]" {
			fmt.Fprintf(w, " (default %s)", d)
		}
		if hasEnv(fl.Name) {
			fmt.Fprintf(w, " [$%s]", EnvName(fl.Name))
		}
		fmt.Fprintln(w)
	})
	fmt.Fprintf(w, "\nEvery flag but -version can also be set by its variable (repeatable flags as\na comma-separated list); the command line wins.\n")
	if f.notes != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(f.notes, "\n"))
	}
}

// Name returns the command as the usage names it.
func (f *FlagSet) Name() string { return f.cmd }
