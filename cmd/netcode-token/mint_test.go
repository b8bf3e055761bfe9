package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

var keyVars = map[string]string{keyEnv: testKeyHex}

func mintArgs(extra ...string) []string {
	return append([]string{"mint", "-protocol", "0x1122334455667788", "-client-id", "42", "-addr", "203.0.113.7:40000"}, extra...)
}

// inspectJSON inspects a token with the key and decodes the JSON.
func inspectJSON(t *testing.T, vars map[string]string, token string, extra ...string) inspected {
	t.Helper()
	r := runCmd(t, vars, token, append([]string{"inspect", "-json"}, extra...)...)
	if r.code != 0 {
		t.Fatalf("inspect: exit %d: %s", r.code, r.stderr)
	}
	var in inspected
	if err := json.Unmarshal([]byte(r.stdout), &in); err != nil {
		t.Fatalf("inspect -json: %v\n%s", err, r.stdout)
	}
	return in
}

func TestMintInspectRoundTrip(t *testing.T) {
	userData := writeFile(t, "ud", "player=42;team=red")
	keyFile := writeFile(t, "key", testKeyHex+"\n")
	r := runCmd(t, nil, "", "mint", "-protocol", "1122334455667788", "-key-file", keyFile, "-client-id", "18446744073709551615",
		"-addr", "203.0.113.7:40000", "-addr", "[2001:db8::7]:40001",
		"-internal-addr", "10.0.0.7:40000", "-internal-addr", "[fd00::7]:40001",
		"-expire", "30", "-timeout", "-1", "-user-data-file", userData)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("mint: exit %d, stderr %q", r.code, r.stderr)
	}
	token := strings.TrimSuffix(r.stdout, "\n")
	if strings.Contains(token, "\n") || len(token) != paddedLen {
		t.Fatalf("token of %d characters on %d lines; want one line of %d", len(token), strings.Count(r.stdout, "\n"), paddedLen)
	}
	if _, err := base64.StdEncoding.Strict().DecodeString(token); err != nil {
		t.Fatalf("not padded standard base64: %v", err)
	}
	in := inspectJSON(t, keyVars, token)
	if in.ProtocolID != "0x1122334455667788" || in.CreateTimestamp != "1800000000" || in.ExpireTimestamp != "1800000030" ||
		in.TimeoutSeconds != -1 || !slices.Equal(in.ServerAddresses, []string{"203.0.113.7:40000", "[2001:db8::7]:40001"}) ||
		in.ClientToServerKey != "" || in.Expired {
		t.Errorf("public fields %+v", in)
	}
	p := in.Private
	if p == nil || p.ClientID != "18446744073709551615" || p.TimeoutSeconds != -1 || !p.KeysMatch ||
		!slices.Equal(p.ServerAddresses, []string{"10.0.0.7:40000", "[fd00::7]:40001"}) ||
		!strings.HasPrefix(p.UserData, fmt.Sprintf("%x00", "player=42;team=red")) || len(p.UserData) != 512 {
		t.Errorf("private fields %+v", p)
	}
	// -show-keys shows the session keys, the same in both parts.
	if in := inspectJSON(t, keyVars, token, "-show-keys"); len(in.ClientToServerKey) != 64 || len(in.ServerToClientKey) != 64 || in.ClientToServerKey == in.ServerToClientKey {
		t.Errorf("-show-keys: %q %q", in.ClientToServerKey, in.ServerToClientKey)
	}
}

func TestMintEncodings(t *testing.T) {
	std := runCmd(t, keyVars, "", mintArgs("-user-data", "cafe")...)
	url := runCmd(t, keyVars, "", mintArgs("-url")...)
	if std.code != 0 || url.code != 0 {
		t.Fatalf("exit %d %d: %s %s", std.code, url.code, std.stderr, url.stderr)
	}
	u := strings.TrimSpace(url.stdout)
	if strings.ContainsAny(u, "+/=") || len(u) != unpaddedLen {
		t.Errorf("-url: %d characters, +/= present: %v; want %d URL-safe characters, unpadded", len(u), strings.ContainsAny(u, "+/="), unpaddedLen)
	}
	if _, err := base64.RawURLEncoding.Strict().DecodeString(u); err != nil {
		t.Errorf("-url: %v", err)
	}
	// inspect reads all four forms: padded and not, each alphabet.
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(std.stdout))
	for _, form := range []string{
		base64.StdEncoding.EncodeToString(raw), base64.RawStdEncoding.EncodeToString(raw),
		base64.URLEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw),
		wrap(base64.StdEncoding.EncodeToString(raw), 76), // MIME-style line breaks
	} {
		in := inspectJSON(t, keyVars, form)
		if in.Private == nil || in.Private.ClientID != "42" || !strings.HasPrefix(in.Private.UserData, "cafe00") {
			t.Errorf("form %.20q...: %+v", form, in.Private)
		}
	}
	// The token text may also be an argument.
	if r := runCmd(t, nil, "", "inspect", u); r.code != 0 || !strings.Contains(r.stdout, "203.0.113.7:40000") {
		t.Errorf("inspect TOKEN: exit %d %s", r.code, r.stderr)
	}
}

func wrap(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + "\r\n")
		s = s[n:]
	}
	return b.String() + s + "\n"
}

// Notes on stderr explain lifetimes that differ from the servers' default.
func TestMintLifetimeNotes(t *testing.T) {
	for _, tt := range []struct {
		expire, want string
	}{
		{"30", ""},
		{"10", "refuses it"},
		{"3600", "admits this token again"},
		{"-1", "never expires"},
	} {
		r := runCmd(t, keyVars, "", mintArgs("-expire", tt.expire)...)
		if r.code != 0 || (tt.want == "") != (r.stderr == "") || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("-expire %s: exit %d, stderr %q; want a note saying %q", tt.expire, r.code, r.stderr, tt.want)
		}
	}
	in := inspectJSON(t, keyVars, runCmd(t, keyVars, "", mintArgs("-expire", "-1")...).stdout)
	if in.ExpireTimestamp != "18446744073709551615" || in.ExpiresAt != "never" {
		t.Errorf("-expire -1: expire %s %s; want 2^64-1, never", in.ExpireTimestamp, in.ExpiresAt)
	}
}

// Every bad input is refused with a message naming what is allowed.
func TestMintErrors(t *testing.T) {
	addrs := func(n int) []string {
		var a []string
		for i := range n {
			a = append(a, "-addr", fmt.Sprintf("192.0.2.%d:40000", i+1))
		}
		return a
	}
	base := []string{"mint", "-protocol", "1122", "-client-id", "1"}
	args := func(extra ...string) []string { return append(slices.Clone(base), extra...) }
	one := addrs(1)
	tests := []struct {
		name string
		vars map[string]string
		args []string
		code int
		want string
	}{
		{"key 31 bytes in env", map[string]string{keyEnv: testKeyHex[:62]}, args(one...), 2, "NETCODE_PRIVATE_KEY: 62 hex digits; want 64 (a 32-byte key)"},
		{"key 33 bytes in file", nil, args(append(one, "-key-file", writeFile(t, "k33", testKeyHex+"00"))...), 1, "66 hex digits; want 64 (a 32-byte key)"},
		{"key not hex", map[string]string{keyEnv: "zz" + testKeyHex[2:]}, args(one...), 2, "character 1 is not a hex digit; want 64 hex digits"},
		{"no key", nil, args(one...), 2, "no private key: give -key-file FILE or set NETCODE_PRIVATE_KEY"},
		{"missing key file", nil, args(append(one, "-key-file", "/nonexistent/key")...), 1, "-key-file: open /nonexistent/key"},
		{"0 addresses", keyVars, args(), 2, "-addr: 0 addresses; allowed 1 to 32"},
		{"33 addresses", keyVars, args(addrs(33)...), 2, "-addr: 33 addresses; allowed 1 to 32"},
		{"32 addresses", keyVars, args(addrs(32)...), 0, ""},
		{"bad address", keyVars, args("-addr", "example.com:40000"), 2, `"example.com:40000": want IPv4:port or [IPv6]:port`},
		{"port 0", keyVars, args("-addr", "192.0.2.1:0"), 2, "port from 1 to 65535"},
		{"unspecified address", keyVars, args("-addr", "0.0.0.0:40000"), 2, "want a specific address"},
		{"zone", keyVars, args("-addr", "[fe80::1%eth0]:40000"), 2, "IPv6 zone"},
		{"internal count", keyVars, args(append(addrs(2), "-internal-addr", "10.0.0.1:1")...), 2, "-internal-addr: 1 addresses for 2 -addr; give none"},
		{"user data not hex", keyVars, args(append(one, "-user-data", "xyz")...), 2, "-user-data: not hex"},
		{"user data odd hex", keyVars, args(append(one, "-user-data", "abc")...), 2, "-user-data: not hex"},
		{"user data 257 bytes", keyVars, args(append(one, "-user-data", strings.Repeat("ab", 257))...), 2, "-user-data: 257 bytes; allowed 0 to 256"},
		{"user data file 257 bytes", keyVars, args(append(one, "-user-data-file", writeFile(t, "ud", strings.Repeat("x", 257)))...), 1, "more than 256 bytes; allowed 0 to 256"},
		{"both user data", keyVars, args(append(one, "-user-data", "ab", "-user-data-file", "f")...), 2, "-user-data or -user-data-file, not both"},
		{"expiry before creation", keyVars, args(append(one, "-expire", "-5")...), 2, `invalid value "-5" for flag -expire: want an integer from 1 to 2147483647, or -1`},
		{"expire 0", keyVars, args(append(one, "-expire", "0")...), 2, `invalid value "0" for flag -expire: want an integer from 1`},
		{"expire not a number", keyVars, args(append(one, "-expire", "soon")...), 2, `invalid value "soon" for flag -expire`},
		{"timeout 0", keyVars, args(append(one, "-timeout", "0")...), 2, `invalid value "0" for flag -timeout: want an integer from 1 to 2147483647, or -1`},
		{"timeout too big", keyVars, args(append(one, "-timeout", "2147483648")...), 2, `"2147483648" for flag -timeout`},
		{"no protocol", keyVars, []string{"mint", "-client-id", "1", "-addr", "192.0.2.1:1"}, 2, "-protocol is required"},
		{"bad protocol", keyVars, []string{"mint", "-protocol", "xyz", "-client-id", "1", "-addr", "192.0.2.1:1"}, 2, `invalid value "xyz" for flag -protocol: want 1 to 16 hex digits`},
		{"protocol too long", keyVars, []string{"mint", "-protocol", "11223344556677889", "-client-id", "1", "-addr", "192.0.2.1:1"}, 2, "want 1 to 16 hex digits"},
		{"no client id", keyVars, []string{"mint", "-protocol", "1", "-addr", "192.0.2.1:1"}, 2, "-client-id is required"},
		{"bad client id", keyVars, []string{"mint", "-protocol", "1", "-client-id", "-3", "-addr", "192.0.2.1:1"}, 2, `invalid value "-3" for flag -client-id: want a decimal number from 0 to 18446744073709551615`},
		{"extra argument", keyVars, args(append(one, "more")...), 2, `unexpected arguments ["more"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, tt.vars, "", tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tt.code, tt.want)
			}
			if tt.code != 0 && r.stdout != "" {
				t.Errorf("a failed mint printed %q", r.stdout)
			}
			if strings.Contains(r.stderr, testKeyHex[2:20]) {
				t.Error("an error repeats the key")
			}
		})
	}
}
