// Command netcode-token makes and reads netcode connect tokens, and serves
// them over HTTP.
//
//	netcode-token keygen [-o FILE]
//	netcode-token mint -protocol HEX -key-file F -client-id N -addr A [-addr B ...] [-internal-addr ...]
//	                   [-expire SECONDS] [-timeout SECONDS] [-user-data HEX | -user-data-file F] [-url]
//	netcode-token inspect [-key-file F] [-show-keys] [-json] [TOKEN | -]
//	netcode-token serve -protocol HEX -key-file F -auth dev|bearer [-secrets-file F]
//	                    -servers A,B | -health-servers URL=ADDR,... | -agones-url URL ...
//
// The private key is 64 hex digits, from -key-file or the environment
// variable NETCODE_PRIVATE_KEY (-key-file wins). Tokens are printed as
// standard base64 on one line (-url: the URL-safe alphabet, unpadded);
// inspect reads either alphabet, padded or not.
//
// Exit status: 0 on success, 2 for a usage error (a bad flag or argument),
// 1 for any other failure (bad input, unreadable files, a refused token).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/netcode-go/netcode/engine"
)

// keyEnv is the environment variable that may hold the private key.
const keyEnv = "NETCODE_PRIVATE_KEY"

// defaultTokenLifetime is the servers' default MaxConnectTokenLifetime
// (the restart rule's lifetime): mint's default -expire and serve's
// default -lifetime.
const defaultTokenLifetime = engine.DefaultMaxConnectTokenLifetime

// env is what a subcommand may touch, so tests run them in-process.
type env struct {
	ctx    context.Context // cancelled to stop serve
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	now    func() time.Time
}

// usageError marks errors in the command line itself (exit status 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

const usage = `usage: netcode-token COMMAND [flags]

commands:
  keygen   print a new private key (64 hex digits)
  mint     mint a connect token, printed as base64 on one line
  inspect  read a connect token (the private part too, with the key)
  serve    run the HTTP token service

"netcode-token COMMAND -h" lists a command's flags.
`

var commands = map[string]func(*env, []string) error{
	"keygen":  runKeygen,
	"mint":    runMint,
	"inspect": runInspect,
	"serve":   runServe,
}

// run executes one command line and returns the exit status.
func run(e *env, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return 2
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(e.stdout, usage)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "netcode-token: unknown command %q; want keygen, mint, inspect or serve\n", args[0])
		return 2
	}
	err := cmd(e, args[1:])
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(e.stderr, "netcode-token %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(e.stderr, "netcode-token %s: %v\n", args[0], err)
		return 1
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(&env{ctx: ctx, getenv: os.Getenv, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, now: time.Now}, os.Args[1:])
	stop()
	os.Exit(code)
}

// newFlagSet returns a flag set whose parse errors are usage errors and
// whose messages go to e.stderr.
func newFlagSet(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: netcode-token %s %s\n\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; a parse error is a usage error (the flag
// package has printed it and the usage already).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	return nil
}
