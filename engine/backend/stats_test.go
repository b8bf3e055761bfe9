package backend

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The handler counts every token it issues and every refusal under the
// code it answered with.
func TestHandlerStats(t *testing.T) {
	cfg, _, _ := testConfig(t)
	cfg.RateLimit = RateLimit{PerSecond: 1, Burst: 2}
	h := mustHandler(t, cfg)
	for range 3 {
		post(h, "1", "") // two issued, one rate-limited
	}
	get := httptest.NewRecorder()
	h.ServeHTTP(get, httptest.NewRequest(http.MethodGet, "/token", nil))
	st := h.Stats()
	want := map[string]uint64{"rate_limited": 1, "method_not_allowed": 1}
	if st.Issued != 2 {
		t.Errorf("issued %d; want 2", st.Issued)
	}
	for i, code := range RefusalCodes {
		if st.Refused[i] != want[code] {
			t.Errorf("refused %q: %d; want %d", code, st.Refused[i], want[code])
		}
	}
	var c handlerCounters
	c.refuse("a code nobody answers")
	if c.refused[len(RefusalCodes)-1].Load() != 1 {
		t.Error("an unknown code is not counted as other")
	}
}
