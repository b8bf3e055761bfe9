package agonestest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// gRPC codes in error bodies: the gateway maps a plain Go error from the
// sidecar to Unknown and HTTP 500, which is how the sidecar reports most
// refusals (not found, out of range, at capacity).
const (
	codeUnknown         = 2
	codeInvalidArgument = 3
	codeNotFound        = 5
	codeUnimplemented   = 12
)

// serve records the request, hangs or fails it if told to, and answers it.
func (s *Sidecar) serve(w http.ResponseWriter, r *http.Request) {
	body, rerr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	s.mu.Lock()
	seq := s.record(Call{Method: r.Method, Path: r.URL.Path, Body: string(body[:min(len(body), maxCallBody)]), At: time.Now()})
	hang := s.hang
	s.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-r.Context().Done():
			return
		}
	}
	s.mu.Lock()
	q := &request{s: s, method: r.Method, path: r.URL.Path, ctype: r.Header.Get("Content-Type"), body: body, readErr: rerr}
	if s.fail != 0 {
		q.reply(s.fail, jsonStatus{Code: codeUnknown, Message: "agonestest: injected failure", Details: []any{}})
	} else {
		s.route(q)
	}
	if q.code == 0 {
		q.reply(http.StatusInternalServerError, jsonStatus{Code: codeUnknown, Message: "agonestest: no reply", Details: []any{}})
	}
	s.setStatus(seq, q.code)
	data, err := json.Marshal(q.out)
	s.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(q.code)
	w.Write(data)
}

// request is one request being answered, under Sidecar.mu.
type request struct {
	s            *Sidecar
	method, path string
	ctype        string
	body         []byte
	readErr      error
	code         int
	out          any
}

func (q *request) reply(code int, v any) { q.code, q.out = code, v }

func (q *request) ok(v any) { q.reply(http.StatusOK, v) }

// bad answers 400 and records a violation of the documented API.
func (q *request) bad(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	q.s.violate("%s %s: %s", q.method, q.path, msg)
	q.reply(http.StatusBadRequest, jsonStatus{Code: codeInvalidArgument, Message: msg, Details: []any{}})
}

// refuse answers like the sidecar turning down a well-formed request.
func (q *request) refuse(format string, args ...any) {
	q.reply(http.StatusInternalServerError, jsonStatus{Code: codeUnknown, Message: fmt.Sprintf(format, args...), Details: []any{}})
}

// allow checks the method; a wrong one is a violation answered 405.
func (q *request) allow(methods ...string) bool {
	if slices.Contains(methods, q.method) {
		return true
	}
	q.s.violate("%s %s: method not allowed; the API has %s", q.method, q.path, strings.Join(methods, ", "))
	q.reply(http.StatusMethodNotAllowed, jsonStatus{Code: codeUnimplemented, Message: "Method Not Allowed", Details: []any{}})
	return false
}

type fields map[string]json.RawMessage

// object parses the body as one JSON object with only the given fields,
// sent as application/json (as every example in the REST guide is).
func (q *request) object(allowed ...string) (fields, bool) {
	switch {
	case q.readErr != nil:
		q.bad("reading the body: %v", q.readErr)
		return nil, false
	case len(bytes.TrimSpace(q.body)) == 0:
		q.bad("no body; the API wants a JSON object (%q at least)", "{}")
		return nil, false
	case !strings.HasPrefix(q.ctype, "application/json"):
		q.bad("Content-Type %q; want application/json", q.ctype)
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(q.body))
	var f fields
	if err := dec.Decode(&f); err != nil || f == nil {
		q.bad("body is not a JSON object: %q", cut(q.body))
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		q.bad("data after the JSON object: %q", cut(q.body))
		return nil, false
	}
	for k := range f {
		if !slices.Contains(allowed, k) {
			q.bad("unknown field %q; the API has %v", k, allowed)
			return nil, false
		}
	}
	return f, true
}

func cut(b []byte) string { return string(b[:min(len(b), 200)]) }

// str reads a string field; required means present and non-empty.
func (q *request) str(f fields, key string, required bool) (string, bool) {
	raw, ok := f[key]
	if !ok {
		if required {
			q.bad("missing field %q", key)
			return "", false
		}
		return "", true
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		q.bad("field %q is %s; want a string", key, raw)
		return "", false
	}
	if required && v == "" {
		q.bad("field %q is empty", key)
		return "", false
	}
	return v, true
}

// int64 reads a proto int64: a decimal string, or a bare integer, both of
// which protojson takes.
func (q *request) int64(f fields, key string) (v int64, present, ok bool) {
	raw, present := f[key]
	if !present {
		return 0, false, true
	}
	text := string(raw)
	if len(raw) > 0 && raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			q.bad("field %q is %s; want an int64", key, raw)
			return 0, true, false
		}
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		q.bad("field %q is %s; want an int64 (a decimal string or integer)", key, raw)
		return 0, true, false
	}
	return v, true, true
}

// strs reads an array of strings.
func (q *request) strs(f fields, key string) (v []string, present, ok bool) {
	raw, present := f[key]
	if !present {
		return nil, false, true
	}
	if err := json.Unmarshal(raw, &v); err != nil || string(raw) == "null" {
		q.bad("field %q is %s; want an array of strings", key, cut(raw))
		return nil, true, false
	}
	return v, true, true
}

// empty checks a body that must be the Empty message, {}.
func (q *request) empty() bool {
	_, ok := q.object()
	return ok
}

// route dispatches on the path; an unknown one is a violation answered 404.
func (q *request) notFound() {
	q.s.violate("%s %s: no such path in the API", q.method, q.path)
	q.reply(http.StatusNotFound, jsonStatus{Code: codeNotFound, Message: "Not Found", Details: []any{}})
}

func (s *Sidecar) route(q *request) {
	p := q.path
	switch {
	case p == "/ready", p == "/health", p == "/shutdown", p == "/allocate":
		s.lifecycle(q)
	case p == "/reserve":
		s.reserve(q)
	case p == "/gameserver":
		if q.allow("GET") {
			q.ok(s.gs.json())
		}
	case p == "/watch/gameserver":
		if q.allow("GET") {
			q.reply(http.StatusNotImplemented, jsonStatus{Code: codeUnimplemented, Message: "agonestest: streaming is not faked", Details: []any{}})
		}
	case p == "/metadata/label", p == "/metadata/annotation":
		s.metadata(q)
	case strings.HasPrefix(p, "/v1beta1/counters/"):
		s.counter(q, strings.TrimPrefix(p, "/v1beta1/counters/"))
	case strings.HasPrefix(p, "/v1beta1/lists/"):
		s.list(q, strings.TrimPrefix(p, "/v1beta1/lists/"))
	case strings.HasPrefix(p, "/alpha/player/"):
		s.player(q, strings.TrimPrefix(p, "/alpha/player/"))
	default:
		q.notFound()
	}
}

// lifecycle is Ready, Health, Shutdown and Allocate: POST with {}.
func (s *Sidecar) lifecycle(q *request) {
	if !q.allow("POST") || !q.empty() {
		return
	}
	switch q.path {
	case "/ready":
		s.gs.state = "Ready"
	case "/shutdown":
		s.gs.state = "Shutdown"
	case "/allocate":
		s.gs.state = "Allocated"
	}
	q.ok(struct{}{})
}

// reserve is POST /reserve {"seconds":"N"} (sdkDuration).
func (s *Sidecar) reserve(q *request) {
	if !q.allow("POST") {
		return
	}
	f, ok := q.object("seconds")
	if !ok {
		return
	}
	secs, _, ok := q.int64(f, "seconds")
	if !ok {
		return
	}
	s.gs.state, s.gs.reserveSeconds = "Reserved", secs
	q.ok(struct{}{})
}

// metadata is PUT /metadata/{label,annotation} {"key","value"}
// (sdkKeyValue). The sidecar refuses keys that are not Kubernetes
// qualified names with InvalidArgument; the client should never send one.
func (s *Sidecar) metadata(q *request) {
	if !q.allow("PUT") {
		return
	}
	f, ok := q.object("key", "value")
	if !ok {
		return
	}
	key, ok := q.str(f, "key", true)
	if !ok {
		return
	}
	value, ok := q.str(f, "value", false)
	if !ok {
		return
	}
	if !qualifiedName(key) {
		q.bad("key %q is not a qualified name", key)
		return
	}
	if q.path == "/metadata/label" {
		if value != "" && !qualifiedName(value) {
			q.bad("label value %q is not a valid label value", value)
			return
		}
		s.gs.labels["agones.dev/sdk-"+key] = value
	} else {
		s.gs.annotations["agones.dev/sdk-"+key] = value
	}
	q.ok(struct{}{})
}

// qualifiedName is a Kubernetes name without a prefix: 1 to 63 of
// [A-Za-z0-9._-], starting and ending with a letter or digit.
func qualifiedName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	an := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	for i := range len(s) {
		if c := s[i]; !an(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return an(s[0]) && an(s[len(s)-1])
}

// sameName checks that a name in the body, if any, is the path's (the
// gateway fills the field from the path).
func (q *request) sameName(f fields, name string) bool {
	n, ok := q.str(f, "name", false)
	if ok && n != "" && n != name {
		q.bad("body name %q differs from the path's %q", n, name)
		return false
	}
	return ok
}

// validName refuses an empty path name or one with a slash in it (which
// the gateway would not route to the name).
func (q *request) validName(name string) bool {
	if name == "" || strings.Contains(name, "/") {
		q.notFound()
		return false
	}
	return true
}

// counter is GET and PATCH /v1beta1/counters/{name}.
func (s *Sidecar) counter(q *request, name string) {
	if !q.validName(name) || !q.allow("GET", "PATCH") {
		return
	}
	if q.method == "GET" {
		c, ok := s.gs.counters[name]
		if !ok {
			q.refuse("counter not found: %s", name)
			return
		}
		q.ok(jsonCounter{name, c.Count, c.Capacity})
		return
	}
	f, ok := q.object("name", "count", "capacity", "countDiff")
	if !ok {
		return
	}
	if !q.sameName(f, name) {
		return
	}
	count, hasCount, ok1 := q.int64(f, "count")
	capacity, hasCap, ok2 := q.int64(f, "capacity")
	diff, _, ok3 := q.int64(f, "countDiff")
	if !ok1 || !ok2 || !ok3 {
		return
	}
	if !hasCount && !hasCap && diff == 0 {
		q.bad("malformed CounterUpdateRequest: sets none of count, capacity, countDiff")
		return
	}
	c, ok := s.gs.counters[name]
	if !ok {
		q.refuse("counter not found: %s", name)
		return
	}
	next := *c
	if hasCap {
		if capacity < 0 {
			q.refuse("out of range. Capacity must be greater than or equal to 0. Found Capacity: %d", capacity)
			return
		}
		next.Capacity = capacity
	}
	if hasCount {
		next.Count = count
	}
	next.Count += diff
	if next.Count < 0 || next.Count > next.Capacity {
		q.refuse("out of range. Count must be within range [0,Capacity]. Found Count: %d, Capacity: %d", next.Count, next.Capacity)
		return
	}
	*c = next
	q.ok(jsonCounter{name, c.Count, c.Capacity})
}

// list is GET and PATCH /v1beta1/lists/{name} and POST
// /v1beta1/lists/{name}:addValue and :removeValue.
func (s *Sidecar) list(q *request, rest string) {
	name, verb, _ := strings.Cut(rest, ":")
	if !q.validName(name) {
		return
	}
	switch verb {
	case "":
		if !q.allow("GET", "PATCH") {
			return
		}
	case "addValue", "removeValue":
		if !q.allow("POST") {
			return
		}
	default:
		q.notFound()
		return
	}
	l, exists := s.gs.lists[name]
	if q.method == "GET" {
		if !exists {
			q.refuse("list not found: %s", name)
			return
		}
		q.ok(jsonList{name, l.Capacity, nonNil(l.Values)})
		return
	}
	if verb != "" {
		s.listValue(q, name, l, verb == "addValue")
		return
	}
	// UpdateList: the body is the List; the gateway makes the field mask
	// from the fields present.
	f, ok := q.object("name", "capacity", "values")
	if !ok {
		return
	}
	if !q.sameName(f, name) {
		return
	}
	capacity, hasCap, ok1 := q.int64(f, "capacity")
	values, hasValues, ok2 := q.strs(f, "values")
	if !ok1 || !ok2 {
		return
	}
	if !hasCap && !hasValues {
		q.bad("UpdateList sets neither capacity nor values (empty field mask)")
		return
	}
	if !exists {
		q.refuse("not found. %s List not found", name)
		return
	}
	if hasCap {
		if capacity < 0 || capacity > MaxListCapacity {
			q.refuse("out of range. Capacity must be within range [0,1000]. Found Capacity: %d", capacity)
			return
		}
		l.Capacity = capacity
	}
	if hasValues {
		l.Values = slices.Clone(values)
	}
	// The sidecar truncates values beyond the capacity.
	l.Values = l.Values[:min(int64(len(l.Values)), l.Capacity)]
	q.ok(jsonList{name, l.Capacity, nonNil(l.Values)})
}

func (s *Sidecar) listValue(q *request, name string, l *List, add bool) {
	f, ok := q.object("name", "value")
	if !ok {
		return
	}
	if !q.sameName(f, name) {
		return
	}
	v, ok := q.str(f, "value", true)
	if !ok {
		return
	}
	if l == nil {
		q.refuse("list not found: %s", name)
		return
	}
	i := slices.Index(l.Values, v)
	switch {
	case add && int64(len(l.Values)) >= l.Capacity:
		q.refuse("out of range. No available capacity. Current Capacity: %d, List Size: %d", l.Capacity, len(l.Values))
		return
	case add && i >= 0:
		q.refuse("already exists. Value: %s already in List: %s", v, name)
		return
	case add:
		l.Values = append(l.Values, v)
	case i < 0:
		q.refuse("not found: value %s not in list %s", v, name)
		return
	default:
		l.Values = slices.Delete(l.Values, i, i+1)
	}
	q.ok(jsonList{name, l.Capacity, nonNil(l.Values)})
}

// player is the alpha player tracking under /alpha/player/.
func (s *Sidecar) player(q *request, rest string) {
	gs := &s.gs
	switch {
	case rest == "connect" || rest == "disconnect":
		if !q.allow("POST") {
			return
		}
		f, ok := q.object("playerID")
		if !ok {
			return
		}
		id, ok := q.str(f, "playerID", true)
		if !ok {
			return
		}
		i := slices.Index(gs.players, id)
		switch {
		case rest == "disconnect" && i < 0:
			q.ok(jsonBool{false})
		case rest == "disconnect":
			gs.players = slices.Delete(gs.players, i, i+1)
			q.ok(jsonBool{true})
		case i >= 0:
			q.ok(jsonBool{false})
		case int64(len(gs.players)) >= gs.playerCap:
			q.refuse("players are already at capacity")
		default:
			gs.players = append(gs.players, id)
			q.ok(jsonBool{true})
		}
	case rest == "capacity":
		if !q.allow("GET", "PUT") {
			return
		}
		if q.method == "GET" {
			q.ok(jsonCount{gs.playerCap})
			return
		}
		f, ok := q.object("count")
		if !ok {
			return
		}
		n, _, ok := q.int64(f, "count")
		if !ok {
			return
		}
		gs.playerCap = n
		q.ok(struct{}{})
	case rest == "count":
		if q.allow("GET") {
			q.ok(jsonCount{int64(len(gs.players))})
		}
	case rest == "connected":
		if q.allow("GET") {
			q.ok(jsonPlayerIDList{nonNil(slices.Clone(gs.players))})
		}
	case strings.HasPrefix(rest, "connected/"):
		id := strings.TrimPrefix(rest, "connected/")
		if q.validName(id) && q.allow("GET") {
			q.ok(jsonBool{slices.Contains(gs.players, id)})
		}
	default:
		q.notFound()
	}
}
