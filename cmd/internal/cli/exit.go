package cli

import (
	"errors"
	"fmt"
	"io"
)

// Exit statuses of every command.
const (
	ExitOK      = 0 // done, or -h, or -version
	ExitFailure = 1 // the command ran and failed
	ExitUsage   = 2 // a bad flag, variable or argument: nothing was done
)

// UsageError marks an error in the command line or the environment.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with a formatted message (%w wraps).
func Usagef(format string, args ...any) error { return UsageError{fmt.Errorf(format, args...)} }

// IsUsage reports whether err is, or wraps, a UsageError.
func IsUsage(err error) bool { return errors.As(err, new(UsageError)) }

// Exit reports err on stderr once, prefixed with the command, and returns
// the exit status: 0 for nil and ErrDone, 2 for a usage error (with a hint
// at -h), 1 for anything else.
func Exit(stderr io.Writer, cmd string, err error) int {
	switch {
	case err == nil, errors.Is(err, ErrDone):
		return ExitOK
	case IsUsage(err):
		fmt.Fprintf(stderr, "%s: %v\n(%s -h lists the flags)\n", cmd, err, cmd)
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
	return ExitFailure
}
