package cli

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// value is a flag.Value whose Set parses and checks its text; the error
// says what is allowed, and the flag set adds which flag or variable it
// came from.
type value[T any] struct {
	p      *T
	parse  func(string) (T, error)
	format func(T) string
}

func (v *value[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

func (v *value[T]) String() string {
	if v == nil || v.p == nil { // the flag package's zero-value probe
		return ""
	}
	return v.format(*v.p)
}

// Var defines a flag whose text parse checks; *p starts as def. Write
// the value's name in the usage in backquotes ("client `N`").
func Var[T any](f *FlagSet, p *T, name string, def T, usage string, parse func(string) (T, error), format func(T) string) {
	*p = def
	f.FlagSet.Var(&value[T]{p, parse, format}, name, usage)
}

// Int defines an int flag allowed from lo to hi.
func (f *FlagSet) Int(p *int, name string, def, lo, hi int, usage string) {
	Var(f, p, name, def, usage, func(s string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("want an integer from %d to %d", lo, hi)
		}
		return n, nil
	}, strconv.Itoa)
}

// Int64 defines an int64 flag allowed from lo to hi, or -1 when
// orMinusOne (which the usage explains).
func (f *FlagSet) Int64(p *int64, name string, def, lo, hi int64, orMinusOne bool, usage string) {
	Var(f, p, name, def, usage, func(s string) (int64, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err == nil && (n >= lo && n <= hi || orMinusOne && n == -1) {
			return n, nil
		}
		if orMinusOne {
			return 0, fmt.Errorf("want an integer from %d to %d, or -1", lo, hi)
		}
		return 0, fmt.Errorf("want an integer from %d to %d", lo, hi)
	}, func(n int64) string { return strconv.FormatInt(n, 10) })
}

// Float defines a float64 flag allowed above lo (exclusive) up to hi.
func (f *FlagSet) Float(p *float64, name string, def, lo, hi float64, usage string) {
	Var(f, p, name, def, usage, func(s string) (float64, error) {
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(x) || x <= lo || x > hi {
			return 0, fmt.Errorf("want a number above %s up to %s", fmtFloat(lo), fmtFloat(hi))
		}
		return x, nil
	}, fmtFloat)
}

// Duration defines a duration flag allowed from lo to hi, in multiples of
// unit (time.Second: whole seconds; 0: any).
func (f *FlagSet) Duration(p *time.Duration, name string, def, lo, hi, unit time.Duration, usage string) {
	Var(f, p, name, def, usage, func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		whole := unit == 0 || d%unit == 0
		if err != nil || d < lo || d > hi || !whole {
			if unit == time.Second {
				return 0, fmt.Errorf("want whole seconds from %v to %v, such as 30s", lo, hi)
			}
			return 0, fmt.Errorf("want a duration from %v to %v, such as 30s or 1m30s", lo, hi)
		}
		return d, nil
	}, time.Duration.String)
}

// boolValue is a bool flag whose error says what is allowed.
type boolValue struct{ p *bool }

func (b boolValue) IsBoolFlag() bool { return true }

func (b boolValue) String() string {
	if b.p == nil {
		return ""
	}
	return strconv.FormatBool(*b.p)
}

func (b boolValue) Set(s string) error {
	v, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	*b.p = v
	return nil
}

// Bool defines a bool flag: -name alone sets it; -name=false, or the
// variable set to true, false, 1 or 0.
func (f *FlagSet) Bool(p *bool, name string, def bool, usage string) {
	*p = def
	f.FlagSet.Var(boolValue{p}, name, usage)
}

// Choice defines a string flag allowed to take one of choices.
func (f *FlagSet) Choice(p *string, name, def string, choices []string, usage string) {
	Var(f, p, name, def, usage, func(s string) (string, error) {
		for _, c := range choices {
			if s == c {
				return s, nil
			}
		}
		return "", fmt.Errorf("want %s", orList(choices))
	}, func(s string) string { return s })
	f.placeholders[name] = strings.Join(choices, "|")
}

// HostPort defines a TCP listen address flag: host:port with a numeric
// port, or, when offOK, empty or "off" for none (stored as "").
func (f *FlagSet) HostPort(p *string, name, def string, offOK bool, usage string) {
	Var(f, p, name, def, usage, func(s string) (string, error) {
		if offOK && (s == "" || s == "off") {
			return "", nil
		}
		_, port, err := net.SplitHostPort(s)
		if _, perr := strconv.ParseUint(port, 10, 16); err != nil || perr != nil {
			if offOK {
				return "", fmt.Errorf("want host:port such as 127.0.0.1:8080 (port 0: any), or off")
			}
			return "", fmt.Errorf("want host:port such as 127.0.0.1:8080 (port 0: any)")
		}
		return s, nil
	}, func(s string) string { return s })
}

// Hex defines a flag of 1 to 16 hex digits (0x optional), such as a
// protocol id, kept as given; empty means not given.
func (f *FlagSet) Hex(p *string, name, usage string) {
	Var(f, p, name, "", usage, func(s string) (string, error) {
		if _, err := ParseHex64(s); err != nil {
			return "", err
		}
		return s, nil
	}, func(s string) string { return s })
}

// ParseHex64 reads 1 to 16 hex digits, 0x optional.
func ParseHex64(s string) (uint64, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0x"), "0X")
	v, err := strconv.ParseUint(t, 16, 64)
	if t == "" || len(t) > 16 || err != nil {
		return 0, fmt.Errorf("want 1 to 16 hex digits (0x optional)")
	}
	return v, nil
}

// orList joins choices as "a, b or c".
func orList(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}

// fmtFloat writes a float without an exponent: 1000000, 0.5.
func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
