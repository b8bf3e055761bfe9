package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/netcode-go/netcode/cmd/internal/cli"
	"github.com/netcode-go/netcode/engine/backend"
)

// listFlag is a repeatable flag whose values may also be comma-separated
// (as its variable is).
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}

const (
	// hashRecheck is the most often the hash file is looked at: a stat
	// per second, however many requests.
	hashRecheck = time.Second
	// maxHashFile bounds what is read of it: 32 hashes and comments.
	maxHashFile = 8 << 10
)

// webTransportConfig builds the WebTransport tokens' configuration from
// serve's flags: nil without -webtransport-server.
func webTransportConfig(o *serveOptions, log *slog.Logger) (*backend.WebTransportConfig, error) {
	if len(o.wtServers) == 0 {
		if len(o.wtHashes) > 0 || o.wtHashFile != "" {
			return nil, usagef("-webtransport-cert-hash and -webtransport-cert-hash-file need -webtransport-server ADDR (the servers' WebTransport addresses)")
		}
		return nil, nil
	}
	var servers []backend.Server
	for i, s := range o.wtServers {
		srv, err := parseServer(s)
		if err != nil {
			return nil, usagef("-webtransport-server, server %d: %w", i+1, err)
		}
		servers = append(servers, srv)
	}
	if len(servers) > backend.MaxServers {
		return nil, usagef("-webtransport-server: %d servers; allowed 1 to %d", len(servers), backend.MaxServers)
	}
	dir, err := backend.NewStaticDirectory(servers)
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	var fixed [][32]byte
	for _, s := range o.wtHashes {
		h, err := parseHash(s)
		if err != nil {
			return nil, usagef("-webtransport-cert-hash %q: %v", s, err)
		}
		fixed = append(fixed, h)
	}
	cfg := &backend.WebTransportConfig{Directory: dir}
	switch {
	case o.wtHashFile != "":
		f := &hashFile{path: o.wtHashFile, log: log, now: time.Now}
		if err := f.load(); err != nil {
			return nil, fmt.Errorf("-webtransport-cert-hash-file: %w", err)
		}
		cfg.CertificateHashes = func() [][32]byte { return append(fixed[:len(fixed):len(fixed)], f.get()...) }
	case len(fixed) > 0:
		cfg.CertificateHashes = func() [][32]byte { return fixed }
	}
	return cfg, nil
}

// parseHash reads a certificate's SHA-256: 64 hex digits.
func parseHash(s string) ([32]byte, error) {
	var h [32]byte
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != len(h) {
		return h, errors.New("want a SHA-256, 64 hex digits")
	}
	copy(h[:], b)
	return h, nil
}

// hashFile is -webtransport-cert-hash-file: hashes one per line (blank
// lines and # comments skipped), as netcode-server -webtransport-hash-file
// writes them. It is read again when its size or time changes, so a
// server restarted with a new development certificate is picked up
// without restarting the token service; a file that cannot be read or
// parsed keeps the hashes last read (and is logged).
type hashFile struct {
	path string
	log  *slog.Logger
	now  func() time.Time

	mu      sync.Mutex
	checked time.Time
	mod     time.Time
	size    int64
	hashes  [][32]byte
}

// get returns the current hashes, looking at the file at most every
// hashRecheck. The slice is never modified once returned.
func (f *hashFile) get() [][32]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if d := now.Sub(f.checked); d >= 0 && d < hashRecheck {
		return f.hashes
	}
	f.checked = now
	st, err := os.Stat(f.path)
	if err == nil && st.ModTime().Equal(f.mod) && st.Size() == f.size {
		return f.hashes
	}
	if err == nil {
		err = f.loadLocked()
	}
	if err != nil {
		f.log.Warn("-webtransport-cert-hash-file: keeping the hashes last read", slog.String("file", f.path), slog.String("error", err.Error()))
	}
	return f.hashes
}

func (f *hashFile) load() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checked = f.now()
	return f.loadLocked()
}

func (f *hashFile) loadLocked() error {
	file, err := os.Open(f.path)
	if err != nil {
		return err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(file, maxHashFile+1))
	if err != nil {
		return err
	}
	if len(b) > maxHashFile {
		return fmt.Errorf("%s: over %d bytes", f.path, maxHashFile)
	}
	var hashes [][32]byte
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		h, err := parseHash(line)
		if err != nil {
			return fmt.Errorf("%s line %d: %v", f.path, i+1, err)
		}
		hashes = append(hashes, h)
	}
	if len(hashes) == 0 {
		return fmt.Errorf("%s: no hash (want lines of 64 hex digits)", f.path)
	}
	if len(hashes) > backend.MaxServers {
		return fmt.Errorf("%s: %d hashes; allowed at most %d", f.path, len(hashes), backend.MaxServers)
	}
	f.hashes, f.mod, f.size = hashes, st.ModTime(), st.Size()
	return nil
}
