// Command netcode-token makes and reads netcode connect tokens, and serves
// them over HTTP.
//
//	netcode-token keygen [-o FILE]
//	netcode-token mint -protocol HEX -key-file F -client-id N -addr A [-addr B ...] [-internal-addr ...]
//	                   [-expire SECONDS] [-timeout SECONDS] [-user-data HEX | -user-data-file F] [-url]
//	netcode-token inspect [-key-file F] [-show-keys] [-json] [TOKEN | -]
//	netcode-token serve -protocol HEX -key-file F -auth dev|bearer [-secrets-file F]
//	                    -servers A,B | -health-servers URL=ADDR,... | -agones-url URL ...
//	                    [-webtransport-server ADDR ... [-webtransport-cert-hash HEX ... | -webtransport-cert-hash-file F]]
//
// serve answers POST /token?transport=webtransport, for browsers, with a
// token naming the -webtransport-server addresses and, in
// certificate_hashes, the servers' certificate hashes for the page to pin.
//
// The private key is 64 hex digits, from -key-file or the environment
// variable NETCODE_PRIVATE_KEY (-key-file wins). Tokens are printed as
// standard base64 on one line (-url: the URL-safe alphabet, unpadded);
// inspect reads either alphabet, padded or not.
//
// Every flag can also be set by its variable: NETCODE_ and the flag's name
// upper-cased, dashes as underscores (-key-file: NETCODE_KEY_FILE); the
// command line wins. "netcode-token -version" prints the build.
//
// Exit status: 0 on success (and for -h, -version), 2 for a usage error
// (a bad flag, variable or argument), 1 for any other failure (bad input,
// unreadable files, a refused token).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/netcode-go/netcode/cmd/internal/cli"
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

func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

const usage = `usage: netcode-token COMMAND [flags]

commands:
  keygen   print a new private key (64 hex digits)
  mint     mint a connect token, printed as base64 on one line
  inspect  read a connect token (the private part too, with the key)
  serve    run the HTTP token service

"netcode-token COMMAND -h" lists a command's flags; every flag can also be set
by its variable, NETCODE_ and the flag's name (-key-file: NETCODE_KEY_FILE).
"netcode-token -version" prints the version.

Exit status: 0 on success (and for -h, -version), 2 for a usage error,
1 for any other failure.
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
		return cli.ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(e.stdout, usage)
		return cli.ExitOK
	case "-version", "--version", "version":
		fmt.Fprintln(e.stdout, cli.Build().Line("netcode-token"))
		return cli.ExitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return cli.Exit(e.stderr, "netcode-token", usagef("unknown command %q; want keygen, mint, inspect or serve", args[0]))
	}
	return cli.Exit(e.stderr, "netcode-token "+args[0], cmd(e, args[1:]))
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(&env{ctx: ctx, getenv: os.Getenv, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, now: time.Now}, os.Args[1:])
	stop()
	os.Exit(code)
}

// newFlagSet returns the flag set of a command.
func newFlagSet(name, synopsis string) *cli.FlagSet {
	return cli.New("netcode-token "+name, synopsis)
}

// parseFlags parses args, then the environment; it returns cli.ErrDone
// after -h or -version.
func parseFlags(e *env, fs *cli.FlagSet, args []string) error {
	return fs.Parse(args, e.getenv, e.stdout)
}
