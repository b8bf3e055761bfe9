package backend

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// The gauges a netcode server exports on /metrics.
const (
	// MetricConnectedClients is the number of connected clients, one
	// series per shard (label shard); the directory sums them.
	MetricConnectedClients = "netcode_connected_clients"
	// MetricMaxClients is the server's number of client slots, one series.
	MetricMaxClients = "netcode_max_clients"
)

// Bounds of a /metrics body.
const (
	maxMetricsBytes = 1 << 20
	maxMetricsLine  = 64 << 10
	maxGaugeValue   = 1 << 31
)

// serverLoad is what a server's /metrics says about its slots.
type serverLoad struct {
	connected, max int64
}

// parseMetrics reads the Prometheus text exposition format (0.0.4, and the
// OpenMetrics text that is a superset of what it reads) and returns the
// sum of MetricConnectedClients and the single MetricMaxClients. Lines of
// other metrics are skipped unparsed, so an exporter's other series cannot
// make a server look dead. It reads at most 1 MiB, lines of at most 64 KiB.
func parseMetrics(r io.Reader) (serverLoad, error) {
	var load serverLoad
	var connectedSeries, maxSeries int
	sc := bufio.NewScanner(io.LimitReader(r, maxMetricsBytes+1))
	sc.Buffer(make([]byte, 0, 4096), maxMetricsLine)
	read := 0
	for sc.Scan() {
		line := sc.Bytes()
		read += len(line) + 1
		if read > maxMetricsBytes {
			return load, fmt.Errorf("metrics: more than %d bytes", maxMetricsBytes)
		}
		name, rest := metricName(line)
		var sum *int64
		switch name {
		case MetricConnectedClients:
			sum = &load.connected
			connectedSeries++
		case MetricMaxClients:
			sum = &load.max
			maxSeries++
		default:
			continue
		}
		v, err := sampleValue(rest)
		if err != nil {
			return load, fmt.Errorf("metrics: %s: %w", name, err)
		}
		if *sum += v; *sum > maxGaugeValue {
			return load, fmt.Errorf("metrics: %s: sum over %d", name, int64(maxGaugeValue))
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return load, fmt.Errorf("metrics: a line over %d bytes", maxMetricsLine)
		}
		return load, fmt.Errorf("metrics: %w", err)
	}
	if connectedSeries == 0 {
		return load, fmt.Errorf("metrics: no %s series", MetricConnectedClients)
	}
	if maxSeries != 1 {
		return load, fmt.Errorf("metrics: %d %s series; want 1", maxSeries, MetricMaxClients)
	}
	return load, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

func isNameByte(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// metricName splits a sample line into its metric name and the rest.
// Comments, blank lines and lines in forms this parser does not read give
// an empty name.
func metricName(line []byte) (string, []byte) {
	i := 0
	for i < len(line) && isSpace(line[i]) {
		i++
	}
	j := i
	for j < len(line) && isNameByte(line[j]) {
		j++
	}
	if j == i || line[i] >= '0' && line[i] <= '9' {
		return "", nil
	}
	return string(line[i:j]), line[j:]
}

// sampleValue parses what follows a metric name: an optional label set,
// the value, and an optional timestamp (ignored). The value must be a
// whole number from 0 to 2^31.
func sampleValue(rest []byte) (int64, error) {
	i, err := skipLabels(rest)
	if err != nil {
		return 0, err
	}
	if i >= len(rest) || !isSpace(rest[i]) {
		return 0, errors.New("want a space and a value after the name and labels")
	}
	for i < len(rest) && isSpace(rest[i]) {
		i++
	}
	j := i
	for j < len(rest) && !isSpace(rest[j]) {
		j++
	}
	f, err := strconv.ParseFloat(string(rest[i:j]), 64)
	if err != nil {
		return 0, errors.New("value is not a number")
	}
	if !(f >= 0 && f <= maxGaugeValue) || f != math.Trunc(f) {
		return 0, fmt.Errorf("value %g; want a whole number from 0 to %d", f, int64(maxGaugeValue))
	}
	return int64(f), nil
}

// skipLabels returns the index just past a label set {name="value",...}
// at the start of b, or 0 when there is none. Values may hold escaped
// quotes and braces.
func skipLabels(b []byte) (int, error) {
	if len(b) == 0 || b[0] != '{' {
		return 0, nil
	}
	i := 1
	for {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		// A label name: plain, or quoted (the UTF-8 names of newer exporters).
		if i < len(b) && b[i] == '"' {
			n, err := skipQuoted(b[i:])
			if err != nil {
				return 0, err
			}
			i += n
		} else {
			j := i
			for j < len(b) && isNameByte(b[j]) {
				j++
			}
			if j == i {
				return 0, errors.New("bad label name")
			}
			i = j
		}
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) || b[i] != '=' {
			return 0, errors.New("want = after a label name")
		}
		i++
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i >= len(b) || b[i] != '"' {
			return 0, errors.New("want a quoted label value")
		}
		n, err := skipQuoted(b[i:])
		if err != nil {
			return 0, err
		}
		i += n
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		switch {
		case i < len(b) && b[i] == ',':
			i++
		case i < len(b) && b[i] == '}':
			return i + 1, nil
		default:
			return 0, errors.New("want , or } after a label")
		}
	}
}

// skipQuoted returns the length of the quoted string at the start of b,
// quotes included; a backslash escapes the next byte.
func skipQuoted(b []byte) (int, error) {
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errors.New("unterminated quoted string")
}
