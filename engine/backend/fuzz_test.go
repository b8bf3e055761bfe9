package backend

import (
	"bufio"
	"bytes"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// Seeds are in testdata/fuzz/<target>.

func FuzzParseMetrics(f *testing.F) {
	f.Fuzz(func(t *testing.T, text []byte) {
		load, err := parseMetrics(bytes.NewReader(text))
		if err != nil {
			return
		}
		if load.connected < 0 || load.connected > maxGaugeValue || load.max < 0 || load.max > maxGaugeValue {
			t.Fatalf("accepted %+v, outside 0 to 2^31", load)
		}
	})
}

// Whatever parses, every secret on a line then authenticates as that
// line's client id.
func FuzzParseBearerSecrets(f *testing.F) {
	f.Fuzz(func(t *testing.T, file []byte) {
		b, err := ParseBearerSecrets(bytes.NewReader(file))
		if err != nil {
			return
		}
		n := 0
		sc := bufio.NewScanner(bytes.NewReader(file))
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) == 0 || fields[0][0] == '#' {
				continue
			}
			n++
			want, _ := strconv.ParseUint(fields[0], 10, 64)
			r := httptest.NewRequest("POST", "/", nil)
			r.Header.Set("Authorization", "Bearer "+fields[1])
			if id, _, err := b.Authenticate(r); err != nil || id != want {
				t.Fatalf("secret on a line of client %d: got %d, %v", want, id, err)
			}
		}
		if n != b.Len() || n == 0 {
			t.Fatalf("%d entry lines, %d secrets", n, b.Len())
		}
	})
}

func FuzzParseAgonesResponse(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, portName string) {
		s, err := parseAgonesResponse(body, portName)
		if err != nil {
			if len(err.Error()) > 1000 {
				t.Fatalf("error of %d bytes: network text is not bounded", len(err.Error()))
			}
			return
		}
		if err := s.check(); err != nil {
			t.Fatalf("accepted an unusable server %v: %v", s.Public, err)
		}
	})
}
