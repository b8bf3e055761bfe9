package agonestest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

func send(t *testing.T, s *Sidecar, method, path, ctype, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.Addr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestValidation: what breaks the documented API is answered 4xx and
// recorded; what keeps to it is not.
func TestValidation(t *testing.T) {
	const js = "application/json"
	for _, tc := range []struct {
		name, method, path, ctype, body string
		code                            int
		violation                       string // "" for none
	}{
		{"ready", "POST", "/ready", js, `{}`, 200, ""},
		{"ready with charset", "POST", "/ready", js + "; charset=utf-8", ` { } `, 200, ""},
		{"unknown path", "POST", "/readyy", js, `{}`, 404, "no such path"},
		{"unknown alpha path", "GET", "/alpha/player/all", "", "", 404, "no such path"},
		{"wrong method", "GET", "/ready", "", "", 405, "method not allowed"},
		{"health without body", "POST", "/health", js, "", 400, "no body"},
		{"no content type", "POST", "/health", "", `{}`, 400, "Content-Type"},
		{"unknown field", "POST", "/shutdown", js, `{"now":true}`, 400, "unknown field"},
		{"not an object", "POST", "/ready", js, `[]`, 400, "not a JSON object"},
		{"null", "POST", "/ready", js, `null`, 400, "not a JSON object"},
		{"trailing data", "POST", "/ready", js, `{}{}`, 400, "data after"},
		{"reserve string seconds", "POST", "/reserve", js, `{"seconds":"5"}`, 200, ""},
		{"reserve number seconds", "POST", "/reserve", js, `{"seconds":5}`, 200, ""},
		{"reserve bad seconds", "POST", "/reserve", js, `{"seconds":"5s"}`, 400, "want an int64"},
		{"label", "PUT", "/metadata/label", js, `{"key":"a","value":"b"}`, 200, ""},
		{"label by POST", "POST", "/metadata/label", js, `{"key":"a","value":"b"}`, 405, "method not allowed"},
		{"label without key", "PUT", "/metadata/label", js, `{"value":"b"}`, 400, "missing field"},
		{"label bad key", "PUT", "/metadata/label", js, `{"key":"a b","value":"b"}`, 400, "qualified name"},
		{"label key not a string", "PUT", "/metadata/label", js, `{"key":1,"value":"b"}`, 400, "want a string"},
		{"counter get", "GET", "/v1beta1/counters/c", "", "", 200, ""},
		{"counter missing", "GET", "/v1beta1/counters/nope", "", "", 500, ""},
		{"counter set", "PATCH", "/v1beta1/counters/c", js, `{"count":"2","capacity":"4"}`, 200, ""},
		{"counter with name", "PATCH", "/v1beta1/counters/c", js, `{"name":"c","countDiff":"1"}`, 200, ""},
		{"counter out of range", "PATCH", "/v1beta1/counters/c", js, `{"count":"9"}`, 500, ""},
		{"counter sets nothing", "PATCH", "/v1beta1/counters/c", js, `{"countDiff":"0"}`, 400, "malformed"},
		{"counter other name", "PATCH", "/v1beta1/counters/c", js, `{"name":"d","count":"1"}`, 400, "differs"},
		{"counter by PUT", "PUT", "/v1beta1/counters/c", js, `{"count":"1"}`, 405, "method not allowed"},
		{"counter camel field", "PATCH", "/v1beta1/counters/c", js, `{"count_diff":"1"}`, 400, "unknown field"},
		{"list capacity", "PATCH", "/v1beta1/lists/l", js, `{"capacity":"3"}`, 200, ""},
		{"list sets nothing", "PATCH", "/v1beta1/lists/l", js, `{}`, 400, "neither"},
		{"list values null", "PATCH", "/v1beta1/lists/l", js, `{"values":null}`, 400, "array of strings"},
		{"list add", "POST", "/v1beta1/lists/l:addValue", js, `{"value":"x"}`, 200, ""},
		{"list add again", "POST", "/v1beta1/lists/l:addValue", js, `{"value":"x"}`, 500, ""},
		{"list add empty", "POST", "/v1beta1/lists/l:addValue", js, `{"value":""}`, 400, "empty"},
		{"list bad verb", "POST", "/v1beta1/lists/l:append", js, `{"value":"x"}`, 404, "no such path"},
		{"list remove", "POST", "/v1beta1/lists/l:removeValue", js, `{"value":"x"}`, 200, ""},
		{"list remove absent", "POST", "/v1beta1/lists/l:removeValue", js, `{"value":"x"}`, 500, ""},
		{"list add by GET", "GET", "/v1beta1/lists/l:addValue", "", "", 405, "method not allowed"},
		{"player capacity number", "PUT", "/alpha/player/capacity", js, `{"count":1}`, 200, ""},
		{"player connect", "POST", "/alpha/player/connect", js, `{"playerID":"p"}`, 200, ""},
		{"player connect full", "POST", "/alpha/player/connect", js, `{"playerID":"q"}`, 500, ""},
		{"player connect snake", "POST", "/alpha/player/connect", js, `{"player_id":"q"}`, 400, "unknown field"},
		{"player connected", "GET", "/alpha/player/connected/p", "", "", 200, ""},
		{"player count by POST", "POST", "/alpha/player/count", js, `{}`, 405, "method not allowed"},
		{"watch", "GET", "/watch/gameserver", "", "", 501, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, Config{Counters: map[string]Counter{"c": {Capacity: 5}}, Lists: map[string]List{"l": {Capacity: 1}}})
			// The "again", "absent" and "full" cases need the step before.
			switch {
			case strings.HasSuffix(tc.name, "again"):
				send(t, s, tc.method, tc.path, tc.ctype, tc.body)
			case tc.name == "list remove absent":
			case tc.name == "list remove":
				send(t, s, "POST", "/v1beta1/lists/l:addValue", js, `{"value":"x"}`)
			case tc.name == "player connect full", tc.name == "player connected":
				send(t, s, "PUT", "/alpha/player/capacity", js, `{"count":"1"}`)
				send(t, s, "POST", "/alpha/player/connect", js, `{"playerID":"p"}`)
			case tc.name == "player connect":
				send(t, s, "PUT", "/alpha/player/capacity", js, `{"count":"1"}`)
			}
			before := len(s.Violations())
			code, body := send(t, s, tc.method, tc.path, tc.ctype, tc.body)
			if code != tc.code {
				t.Errorf("status %d (%s); want %d", code, body, tc.code)
			}
			v := s.Violations()[before:]
			switch {
			case tc.violation == "" && len(v) != 0:
				t.Errorf("violations %q; want none", v)
			case tc.violation != "" && (len(v) != 1 || !strings.Contains(v[0], tc.violation)):
				t.Errorf("violations %q; want one about %q", v, tc.violation)
			}
			calls := s.Calls()
			if last := calls[len(calls)-1]; last.Method != tc.method || last.Path != tc.path || last.Status != tc.code || last.Body != tc.body {
				t.Errorf("recorded %+v", last)
			}
		})
	}
}

// TestState: the calls change the GameServer the way the sidecar does.
func TestState(t *testing.T) {
	const js = "application/json"
	s := Start(t, Config{Lists: map[string]List{"l": {Capacity: 3, Values: []string{"a", "b", "c"}}}})
	for _, c := range []struct{ method, path, body, state string }{
		{"POST", "/ready", `{}`, "Ready"},
		{"POST", "/allocate", `{}`, "Allocated"},
		{"POST", "/reserve", `{"seconds":"10"}`, "Reserved"},
		{"POST", "/shutdown", `{}`, "Shutdown"},
	} {
		if code, body := send(t, s, c.method, c.path, js, c.body); code != 200 || body != "{}" {
			t.Fatalf("%s %s: %d %s", c.method, c.path, code, body)
		}
		if got := s.State(); got != c.state {
			t.Errorf("after %s: state %q; want %q", c.path, got, c.state)
		}
	}
	if s.ReserveSeconds() != 10 {
		t.Errorf("reserve seconds %d; want 10", s.ReserveSeconds())
	}
	// Shrinking a List truncates its values, as the sidecar does.
	code, body := send(t, s, "PATCH", "/v1beta1/lists/l", js, `{"capacity":"2"}`)
	if code != 200 || body != `{"name":"l","capacity":"2","values":["a","b"]}` {
		t.Errorf("shrink: %d %s", code, body)
	}
	_, body = send(t, s, "GET", "/gameserver", "", "")
	for _, want := range []string{`"object_meta":{`, `"state":"Shutdown"`, `"lists":{"l":{"capacity":"2","values":["a","b"]}}`, `"ports":[{"name":"default","port":7777}]`, `"players":{"capacity":"0","count":"0","ids":[]}`} {
		if !strings.Contains(body, want) {
			t.Errorf("gameserver %s lacks %s", body, want)
		}
	}
	s.CheckClean(t)
}

func TestLateStart(t *testing.T) {
	s := Start(t, Config{Down: true})
	_, err := s.Client().Post("http://"+s.Addr()+"/ready", "application/json", strings.NewReader("{}"))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err %v; want the connection refused", err)
	}
	if err := s.Up(); err != nil {
		t.Fatal(err)
	}
	if code, _ := send(t, s, "POST", "/ready", "application/json", "{}"); code != 200 {
		t.Errorf("status %d after Up", code)
	}

	s2 := Start(t, Config{Down: true, UpAfterDials: 3})
	for i := range 2 {
		if _, err := s2.Client().Get("http://" + s2.Addr() + "/gameserver"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial %d: err %v; want refused", i+1, err)
		}
	}
	if code, _ := send(t, s2, "GET", "/gameserver", "", ""); code != 200 || s2.Dials() != 3 {
		t.Errorf("third dial: status %d, %d dials; want 200, 3", code, s2.Dials())
	}
}

func TestFailAndHang(t *testing.T) {
	s := Start(t, Config{})
	s.Fail(503)
	if code, body := send(t, s, "POST", "/health", "application/json", "{}"); code != 503 || !strings.Contains(body, "injected") {
		t.Errorf("failing: %d %s", code, body)
	}
	s.Fail(0)
	s.Hang()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+s.Addr()+"/health", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	if _, err := s.Client().Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hanging: err %v; want the deadline", err)
	}
	// hanging sends a Health and waits until the sidecar holds it.
	hanging := func() chan int {
		done := make(chan int, 1)
		n := s.Count("POST", "/health")
		go func() {
			resp, err := s.Client().Post("http://"+s.Addr()+"/health", "application/json", strings.NewReader("{}"))
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		for deadline := time.Now().Add(10 * time.Second); s.Count("POST", "/health") == n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the request never reached the sidecar")
			}
		}
		return done
	}
	done := hanging()
	s.Release()
	select {
	case code := <-done:
		if code != 200 {
			t.Errorf("released: %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("request still hanging after Release")
	}
	// Close answers whatever still hangs.
	s.Hang()
	done = hanging()
	s.Close()
	if code := <-done; code != 200 {
		t.Errorf("after Close: %d", code)
	}
}

// FuzzRequest: no request makes the fake panic or answer without a
// status, and whatever is not 2xx or a refusal is recorded.
func FuzzRequest(f *testing.F) {
	f.Add("POST", "/ready", "{}")
	f.Add("PATCH", "/v1beta1/counters/c", `{"count":"1","countDiff":-1}`)
	f.Add("PATCH", "/v1beta1/lists/l", `{"values":["a",1]}`)
	f.Add("POST", "/v1beta1/lists/l:addValue", `{"value":"\u0000"}`)
	f.Add("PUT", "/alpha/player/capacity", `{"count":"-9223372036854775808"}`)
	f.Add("POST", "/alpha/player/connect", `{"playerID":"p","playerID":""}`)
	f.Add("GET", "/alpha/player/connected/", "")
	f.Fuzz(func(t *testing.T, method, path, body string) {
		s := &Sidecar{counts: make(map[string]int), gs: newGameServer(Config{
			Counters:       map[string]Counter{"c": {Count: 1, Capacity: 2}},
			Lists:          map[string]List{"l": {Capacity: 2}},
			PlayerCapacity: 2,
		})}
		req := &http.Request{
			Method: method,
			URL:    &url.URL{Path: path},
			Header: http.Header{"Content-Type": {"application/json"}},
			Body:   io.NopCloser(strings.NewReader(body)),
		}
		w := httptest.NewRecorder()
		s.serve(w, req)
		if w.Code < 200 || w.Code > 599 {
			t.Fatalf("status %d", w.Code)
		}
		if w.Code >= 400 && w.Code < 500 && len(s.Violations()) == 0 {
			t.Fatalf("%s %s %q answered %d without a violation", method, path, body, w.Code)
		}
	})
}
