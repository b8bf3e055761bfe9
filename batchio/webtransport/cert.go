package webtransport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"time"
)

// MaxDevCertificateValidity is the longest validity a certificate that
// browsers pin by hash (serverCertificateHashes) may have.
const MaxDevCertificateValidity = 14 * 24 * time.Hour

// devBackdate starts a development certificate's validity a little in the
// past, so a client whose clock is slightly behind accepts it; it counts in
// the validity, which Chrome bounds.
const devBackdate = time.Hour

// DevCertificate makes a self-signed ECDSA P-256 certificate for hosts (IP
// addresses or DNS names; none: localhost, 127.0.0.1 and ::1), valid for
// validity from an hour ago. Browsers accept it only when the page pins
// its hash (CertificateHash) with serverCertificateHashes, which Chrome
// allows for certificates valid at most 14 days: a longer validity, or
// less than two hours, is an error.
func DevCertificate(validity time.Duration, hosts ...string) (tls.Certificate, error) {
	if validity < 2*devBackdate || validity > MaxDevCertificateValidity {
		return tls.Certificate{}, fmt.Errorf("webtransport: development certificate validity %v; allowed %v to %v (browsers refuse hash-pinned certificates valid longer)",
			validity, 2*devBackdate, MaxDevCertificateValidity)
	}
	if len(hosts) == 0 {
		hosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("webtransport: development certificate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("webtransport: development certificate serial: %w", err)
	}
	start := time.Now().Add(-devBackdate)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "netcode development"},
		NotBefore:             start,
		NotAfter:              start.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		if h == "" {
			return tls.Certificate{}, errors.New("webtransport: development certificate: empty host name")
		}
		if ip, err := netip.ParseAddr(h); err == nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip.AsSlice())
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("webtransport: development certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("webtransport: development certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// certificateHash is the SHA-256 of a certificate's leaf (DER), what a
// browser's serverCertificateHashes pins.
func certificateHash(c *tls.Certificate) ([32]byte, error) {
	if c == nil || len(c.Certificate) == 0 || len(c.Certificate[0]) == 0 {
		return [32]byte{}, errors.New("webtransport: Config.Certificate has no certificate (want a leaf certificate and its key)")
	}
	if c.PrivateKey == nil {
		return [32]byte{}, errors.New("webtransport: Config.Certificate has no private key")
	}
	return sha256.Sum256(c.Certificate[0]), nil
}
