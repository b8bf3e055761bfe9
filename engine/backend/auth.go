package backend

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// AuthFunc authenticates a request and returns the caller's client id and
// the user data (at most 256 bytes) for its connect token. The client id
// must be the caller's identity, never a value the caller chooses: a
// server admits one connection per client id, which is what stops one
// player holding two sessions. The handler wraps r.Body so reading more
// than Config.MaxBodyBytes fails.
//
// To refuse, return an *AuthError to choose the status and the message the
// caller sees; any other error is answered 401 with a fixed message. The
// handler logs the error's text, so keep secrets out of it.
type AuthFunc func(r *http.Request) (clientID uint64, userData []byte, err error)

// AuthError is an AuthFunc refusal with a status and a message for the
// caller.
type AuthError struct {
	// Status is 400, 401, 403 or 503; anything else is sent as 401.
	Status int
	// Message is sent to the caller as is.
	Message string
	// Challenge, when set, is the WWW-Authenticate header of a 401.
	Challenge string
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("authentication refused (%d): %s", e.Status, e.Message)
}

// ClientIDParam is the query parameter LoopbackOnly reads the client id
// from.
const ClientIDParam = "client_id"

// ForwardingHeader reports whether a header's name suggests that a proxy
// relayed the request: the request's RemoteAddr is then the proxy's, and
// being loopback says nothing about the real caller. It is a rule, not a
// list, so that headers it has never heard of are refused too: a name
// containing "forward", "proxy", "addr", "clientip" or "realip", or with a
// part (split at '-' and '_') that is "via", "ip", "ipv4" or "ipv6".
// Forwarded, Via, X-Forwarded-*, X-Original-Forwarded-For, X-Real-IP,
// True-Client-IP, X-Client-IP, CF-Connecting-IP(v6), Fastly-Client-IP,
// X-Azure-ClientIP, X-Envoy-External-Address and Proxy-* all match.
func ForwardingHeader(name string) bool {
	n := strings.ToLower(name)
	for _, s := range [...]string{"forward", "proxy", "addr", "clientip", "realip"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	for part := range strings.FieldsFuncSeq(n, func(r rune) bool { return r == '-' || r == '_' }) {
		switch part {
		case "via", "ip", "ipv4", "ipv6":
			return true
		}
	}
	return false
}

// LoopbackOnly is an AuthFunc for development. It admits only requests
// whose connection comes from a loopback address (127.0.0.0/8, ::1) and
// that carry no header a proxy may have added (ForwardingHeader): behind a
// proxy on the same host every caller would look like loopback. A plain
// TCP forwarder on the host adds no header, so never run it where one
// listens. The client id is the decimal query parameter client_id (0 to
// 2^64-1), so anyone on the host can be anyone: never use it where players
// connect. No user data.
func LoopbackOnly(r *http.Request) (uint64, []byte, error) {
	return loopbackOnly(r, false)
}

// LoopbackOnlyDirect is LoopbackOnly for a listener the operator knows no
// proxy relays to: it ignores forwarding headers instead of refusing the
// request.
func LoopbackOnlyDirect(r *http.Request) (uint64, []byte, error) {
	return loopbackOnly(r, true)
}

func loopbackOnly(r *http.Request, direct bool) (uint64, []byte, error) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return 0, nil, &AuthError{Status: http.StatusForbidden, Message: "development mode: only loopback callers are served"}
	}
	if !direct {
		for name := range r.Header {
			if ForwardingHeader(name) {
				return 0, nil, &AuthError{Status: http.StatusForbidden, Message: "development mode: requests that may have been relayed by a proxy (" + name + " header) are refused; a listener no proxy relays to can say so (-dev-direct)"}
			}
		}
	}
	s := r.URL.Query().Get(ClientIDParam)
	if s == "" {
		return 0, nil, &AuthError{Status: http.StatusBadRequest, Message: "development mode: name the client with the query parameter client_id (a decimal number 0 to 18446744073709551615)"}
	}
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, nil, &AuthError{Status: http.StatusBadRequest, Message: "client_id: want a decimal number 0 to 18446744073709551615"}
	}
	return id, nil, nil
}

// Bearer secret bounds.
const (
	// MinSecretBytes is the shortest secret a secrets file may hold.
	MinSecretBytes = 16
	// MaxSecretBytes is the longest.
	MaxSecretBytes = 256

	maxSecretsLine   = 1024
	maxSecretsBytes  = 16 << 20
	maxSecretEntries = 1 << 20
)

// BearerSecrets authenticates "Authorization: Bearer SECRET" against a
// table of secrets, each naming one client id.
//
// The table keeps SHA-256 hashes of the secrets, not the secrets, and finds
// a presented secret by its hash: the time a lookup takes depends on the
// hash, which says nothing usable about any secret's bytes (a byte-wise
// compare would leak how much of a guess matched), and one lookup costs the
// same for ten secrets or a million.
type BearerSecrets struct {
	byHash map[[sha256.Size]byte]uint64
}

// LoadBearerSecrets reads a secrets file; see ParseBearerSecrets for the
// format.
func LoadBearerSecrets(path string) (*BearerSecrets, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := ParseBearerSecrets(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// ParseBearerSecrets reads lines of "CLIENT_ID SECRET": a decimal client
// id (0 to 2^64-1), spaces or tabs, and a secret of 16 to 256 printable
// ASCII characters without spaces. Blank lines and lines starting with #
// are skipped. Several secrets may name one client (rotation); a secret
// may appear once. At most 2^20 entries, lines of 1024 bytes and 16 MiB.
// Errors name the line and the rule, never the line's content.
func ParseBearerSecrets(r io.Reader) (*BearerSecrets, error) {
	b := &BearerSecrets{byHash: make(map[[sha256.Size]byte]uint64)}
	seen := make(map[[sha256.Size]byte]int) // hash -> line, for the duplicate message
	sc := bufio.NewScanner(io.LimitReader(r, maxSecretsBytes+1))
	sc.Buffer(make([]byte, 0, 256), maxSecretsLine)
	line, total := 0, 0
	for sc.Scan() {
		line++
		total += len(sc.Bytes()) + 1
		if total > maxSecretsBytes {
			return nil, fmt.Errorf("secrets: more than %d bytes", maxSecretsBytes)
		}
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			return nil, fmt.Errorf("secrets line %d: %d fields; want 2: CLIENT_ID SECRET", line, len(fields))
		}
		id, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("secrets line %d: client id is not a decimal number 0 to 18446744073709551615 (want CLIENT_ID SECRET)", line)
		}
		secret := fields[1]
		if err := checkSecret(secret); err != nil {
			return nil, fmt.Errorf("secrets line %d: %w", line, err)
		}
		h := sha256.Sum256([]byte(secret))
		if first, dup := seen[h]; dup {
			return nil, fmt.Errorf("secrets line %d: the same secret as line %d; each secret names one client", line, first)
		}
		if len(b.byHash) >= maxSecretEntries {
			return nil, fmt.Errorf("secrets line %d: more than %d secrets", line, maxSecretEntries)
		}
		seen[h] = line
		b.byHash[h] = id
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("secrets line %d: longer than %d bytes", line+1, maxSecretsLine)
		}
		return nil, fmt.Errorf("secrets: %w", err)
	}
	if len(b.byHash) == 0 {
		return nil, errors.New("secrets: no entries; want lines of CLIENT_ID SECRET")
	}
	return b, nil
}

func checkSecret(s string) error {
	if len(s) < MinSecretBytes || len(s) > MaxSecretBytes {
		return fmt.Errorf("secret of %d characters; allowed %d to %d", len(s), MinSecretBytes, MaxSecretBytes)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("secret has a byte outside printable ASCII at position %d; allowed ! to ~", i+1)
		}
	}
	return nil
}

// Len returns the number of secrets.
func (b *BearerSecrets) Len() int { return len(b.byHash) }

const bearerChallenge = `Bearer realm="netcode"`

// Authenticate is an AuthFunc: the client id of the request's bearer
// secret, no user data.
func (b *BearerSecrets) Authenticate(r *http.Request) (uint64, []byte, error) {
	h := r.Header.Get("Authorization")
	scheme, secret, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return 0, nil, &AuthError{Status: http.StatusUnauthorized, Message: "want an Authorization: Bearer header", Challenge: bearerChallenge}
	}
	id, ok := b.byHash[sha256.Sum256([]byte(strings.TrimSpace(secret)))]
	if !ok {
		return 0, nil, &AuthError{Status: http.StatusUnauthorized, Message: "unknown bearer secret", Challenge: bearerChallenge + `, error="invalid_token"`}
	}
	return id, nil, nil
}
