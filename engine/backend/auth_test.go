package backend

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestLoopbackOnly(t *testing.T) {
	tests := []struct {
		name    string
		remote  string
		target  string
		header  string
		status  int // 0: admitted
		wantID  uint64
		message string
	}{
		{"IPv4 loopback", "127.0.0.1:5000", "/?client_id=42", "", 0, 42, ""},
		{"other 127/8", "127.3.2.1:5000", "/?client_id=18446744073709551615", "", 0, 1<<64 - 1, ""},
		{"IPv6 loopback", "[::1]:5000", "/?client_id=0", "", 0, 0, ""},
		{"mapped IPv4 loopback", "[::ffff:127.0.0.1]:5000", "/?client_id=1", "", 0, 1, ""},
		{"private address", "10.0.0.1:5000", "/?client_id=1", "", 403, 0, "loopback"},
		{"public address", "203.0.113.5:5000", "/?client_id=1", "", 403, 0, "loopback"},
		{"IPv6 address", "[2001:db8::1]:5000", "/?client_id=1", "", 403, 0, "loopback"},
		{"unparsable remote", "pipe", "/?client_id=1", "", 403, 0, "loopback"},
		{"through a proxy", "127.0.0.1:5000", "/?client_id=1", "X-Forwarded-For", 403, 0, "proxy"},
		{"Forwarded", "127.0.0.1:5000", "/?client_id=1", "Forwarded", 403, 0, "Forwarded"},
		{"X-Real-IP", "127.0.0.1:5000", "/?client_id=1", "X-Real-IP", 403, 0, "X-Real-Ip"},
		{"Via", "127.0.0.1:5000", "/?client_id=1", "Via", 403, 0, "Via"},
		{"no client id", "127.0.0.1:5000", "/", "", 400, 0, "client_id"},
		{"bad client id", "127.0.0.1:5000", "/?client_id=-1", "", 400, 0, "0 to 18446744073709551615"},
		{"client id too big", "127.0.0.1:5000", "/?client_id=18446744073709551616", "", 400, 0, "decimal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, tt.target, nil)
			r.RemoteAddr = tt.remote
			if tt.header != "" {
				r.Header.Set(tt.header, "203.0.113.9")
			}
			id, ud, err := LoopbackOnly(r)
			if tt.status == 0 {
				if err != nil || id != tt.wantID || ud != nil {
					t.Fatalf("got %d %v %v; want %d admitted", id, ud, err, tt.wantID)
				}
				return
			}
			ae, ok := errors.AsType[*AuthError](err)
			if !ok || ae.Status != tt.status || !strings.Contains(ae.Message, tt.message) {
				t.Fatalf("error %v; want status %d saying %q", err, tt.status, tt.message)
			}
		})
	}
}

const goodSecrets = `# client id, secret
1 0123456789abcdef0123
  2	secret-for-two!!#x  
# blank lines and comments are skipped

2 another-secret-for-2
18446744073709551615 ~~~~~~~~~~~~~~~~
`

func TestBearerSecrets(t *testing.T) {
	b, err := ParseBearerSecrets(strings.NewReader(goodSecrets))
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != 4 {
		t.Errorf("%d secrets; want 4", b.Len())
	}
	tests := []struct {
		header string
		id     uint64
		status int
	}{
		{"Bearer 0123456789abcdef0123", 1, 0},
		{"bearer secret-for-two!!#x", 2, 0},
		{"BEARER another-secret-for-2", 2, 0},
		{"Bearer ~~~~~~~~~~~~~~~~", 1<<64 - 1, 0},
		{"Bearer 0123456789abcdef012", 0, 401}, // a prefix
		{"Bearer 0123456789abcdef01234", 0, 401},
		{"Bearer ", 0, 401},
		{"Basic 0123456789abcdef0123", 0, 401},
		{"0123456789abcdef0123", 0, 401},
		{"", 0, 401},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		id, _, err := b.Authenticate(r)
		if tt.status == 0 {
			if err != nil || id != tt.id {
				t.Errorf("%q: %d %v; want client %d", tt.header, id, err, tt.id)
			}
			continue
		}
		ae, ok := errors.AsType[*AuthError](err)
		if !ok || ae.Status != tt.status || !strings.HasPrefix(ae.Challenge, "Bearer") {
			t.Errorf("%q: %v; want %d with a Bearer challenge", tt.header, err, tt.status)
		}
	}
}

// Every bad file is refused with the line and the rule, and no error
// repeats a secret (or anything else from the line).
func TestParseBearerSecretsErrors(t *testing.T) {
	const s = "SECRETSECRETSECRET"
	tests := []struct {
		name, file, want string
	}{
		{"empty", "", "no entries"},
		{"comments only", "# nothing\n\n", "no entries"},
		{"one field", "1\n", "line 1: 1 fields; want 2"},
		{"three fields", "1 " + s + " extra\n", "line 1: 3 fields"},
		{"swapped", s + " 1\n", "line 1: client id is not a decimal"},
		{"negative id", "-1 " + s + "\n", "client id is not a decimal"},
		{"id too big", "18446744073709551616 " + s + "\n", "client id is not a decimal"},
		{"short secret", "1 SECRETSECRETSEC\n", "secret of 15 characters; allowed 16 to 256"},
		{"long secret", "1 " + strings.Repeat("S", 257) + "\n", "secret of 257 characters; allowed 16 to 256"},
		{"non-ASCII", "1 SECRETSECRETSECRET\u00e9\n", "outside printable ASCII at position 19"},
		{"control byte", "1 SECRETSECRET\x01SECRET\n", "outside printable ASCII at position 13"},
		{"duplicate secret", "1 " + s + "\n#\n2 " + s + "\n", "line 3: the same secret as line 1"},
		{"long line", "1 " + s + "\n2 " + strings.Repeat("S", 1100) + "\n", "line 2: longer than 1024 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseBearerSecrets(strings.NewReader(tt.file))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one saying %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "SECRETSEC") || strings.Contains(err.Error(), "SSSSSSSS") {
				t.Errorf("error %q repeats the secret", err)
			}
		})
	}
}
