package main

import (
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/netcode-go/netcode/batchio/webtransport"
)

// webTransportConfig reads the -webtransport flags: nil when
// -webtransport is off. Without -webtransport-cert and -webtransport-key
// the listener makes a development certificate, which only a page given
// its hash trusts: that is for loopback addresses only.
func webTransportConfig(o *options) (*webtransport.Config, error) {
	if !o.webTransport.IsValid() {
		for _, f := range []struct{ name, v string }{
			{"-webtransport-cert", o.webTransportCert}, {"-webtransport-key", o.webTransportKey},
			{"-webtransport-hash-file", o.webTransportHash},
		} {
			if f.v != "" {
				return nil, usagef("%s needs -webtransport ADDR (the UDP address to serve browsers on)", f.name)
			}
		}
		if o.webTransportPublic.IsValid() || len(o.webTransportOrigin) > 0 {
			return nil, usagef("-webtransport-public and -webtransport-origin need -webtransport ADDR (the UDP address to serve browsers on)")
		}
		return nil, nil
	}
	cfg := &webtransport.Config{Addr: o.webTransport, AllowedOrigins: o.webTransportOrigin}
	switch {
	case (o.webTransportCert == "") != (o.webTransportKey == ""):
		return nil, usagef("-webtransport-cert and -webtransport-key go together: give both PEM files, or neither for a development certificate (loopback only)")
	case o.webTransportCert != "":
		cert, err := tls.LoadX509KeyPair(o.webTransportCert, o.webTransportKey)
		if err != nil {
			return nil, fmt.Errorf("-webtransport-cert %s, -webtransport-key %s: %w", o.webTransportCert, o.webTransportKey, err)
		}
		cfg.Certificate = &cert
	case !o.webTransport.Addr().IsLoopback():
		return nil, usagef("-webtransport %v without -webtransport-cert and -webtransport-key: a development certificate is for loopback addresses only (such as 127.0.0.1:4433); give the certificate and key browsers trust", o.webTransport)
	}
	return cfg, nil
}

// publishHash writes the listener's certificate hash to -webtransport-hash-file
// (64 hex digits and a newline, replaced whole), and logs how a page uses
// a development certificate.
func publishHash(o *options, log *slog.Logger, dev bool) func(*webtransport.Conn) error {
	return func(c *webtransport.Conn) error {
		h := c.CertificateHash()
		hexHash := hex.EncodeToString(h[:])
		if dev {
			log.Warn("WebTransport: development certificate (self-signed, valid 10 days): pages must pin its hash with serverCertificateHashes",
				slog.String("url", c.URL(c.LocalAddr().Addr().String())), slog.String("certificate_sha256", hexHash))
		}
		if o.webTransportHash == "" {
			return nil
		}
		if err := writeFileAtomic(o.webTransportHash, []byte(hexHash+"\n")); err != nil {
			return fmt.Errorf("-webtransport-hash-file: %w", err)
		}
		return nil
	}
}

// writeFileAtomic replaces path with data: a reader sees the old file or
// the new one, never a part.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := f.Chmod(0o644); werr == nil {
		werr = err
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
	}
	return werr
}
