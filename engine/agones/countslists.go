package agones

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// Counters and Lists (beta, feature gate CountsAndLists): paths, methods and
// bodies from agones sdks/swagger/beta.swagger.json (proto/sdk/beta/beta.proto)
// and the REST guide's "Counters and Lists". Updates go through the
// sidecar, which batches them to the GameServer every second.

// Counter is a named count with a capacity.
type Counter struct {
	Name     string
	Count    int64
	Capacity int64
}

// List is a named set of values with a capacity (at most 1000 in Agones).
type List struct {
	Name     string
	Capacity int64
	Values   []string
}

// CounterUpdate is a change to a Counter: nil fields are left alone. The
// sidecar applies Capacity, then Count, then CountDiff, and refuses a
// count outside [0, capacity].
type CounterUpdate struct {
	Count     *int64
	Capacity  *int64
	CountDiff int64 // added to the count
}

// maxNameLen bounds Counter, List and player names sent in a path.
const maxNameLen = 253

// checkName refuses names that are empty, too long, or that would change
// the path they are put in.
func checkName(kind, name string) error {
	if name == "" || len(name) > maxNameLen || strings.ContainsAny(name, "/:?#%\\") || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("agones: %s name %q; want 1 to %d characters with no space, control character or any of /:?#%%\\", kind, excerpt([]byte(name), 80), maxNameLen)
	}
	return nil
}

// GetCounter returns a Counter: GET /v1beta1/counters/{name}.
func (s *SDK) GetCounter(ctx context.Context, name string) (Counter, error) {
	if err := checkName("Counter", name); err != nil {
		return Counter{}, err
	}
	return s.counterCall(ctx, call{name: "GetCounter " + name, method: "GET", path: "/v1beta1/counters/" + url.PathEscape(name), idempotent: true})
}

// UpdateCounter changes a Counter and returns it:
// PATCH /v1beta1/counters/{name} {"count":"N","capacity":"N","countDiff":"N"}
// with the fields u sets. A non-zero CountDiff makes the call unsafe to
// repeat, so it is then retried only when the sidecar refused the
// connection.
func (s *SDK) UpdateCounter(ctx context.Context, name string, u CounterUpdate) (Counter, error) {
	if err := checkName("Counter", name); err != nil {
		return Counter{}, err
	}
	if u.Count == nil && u.Capacity == nil && u.CountDiff == 0 {
		return Counter{}, fmt.Errorf("agones: UpdateCounter %q: the update sets nothing; set Count, Capacity or a non-zero CountDiff", name)
	}
	if u.Count != nil && *u.Count < 0 || u.Capacity != nil && *u.Capacity < 0 {
		return Counter{}, fmt.Errorf("agones: UpdateCounter %q: count and capacity must be 0 or more", name)
	}
	var in wireCounterUpdate
	if u.Count != nil {
		in.Count = ptr(*u.Count)
	}
	if u.Capacity != nil {
		in.Capacity = ptr(*u.Capacity)
	}
	in.CountDiff = i64(u.CountDiff)
	return s.counterCall(ctx, call{name: "UpdateCounter " + name, method: "PATCH", path: "/v1beta1/counters/" + url.PathEscape(name), in: in, idempotent: u.CountDiff == 0})
}

// SetCounterCount sets a Counter's count.
func (s *SDK) SetCounterCount(ctx context.Context, name string, count int64) (Counter, error) {
	return s.UpdateCounter(ctx, name, CounterUpdate{Count: &count})
}

// SetCounterCapacity sets a Counter's capacity.
func (s *SDK) SetCounterCapacity(ctx context.Context, name string, capacity int64) (Counter, error) {
	return s.UpdateCounter(ctx, name, CounterUpdate{Capacity: &capacity})
}

// IncrementCounter adds n > 0 to a Counter's count.
func (s *SDK) IncrementCounter(ctx context.Context, name string, n int64) (Counter, error) {
	if n <= 0 {
		return Counter{}, fmt.Errorf("agones: IncrementCounter %q by %d; want more than 0", name, n)
	}
	return s.UpdateCounter(ctx, name, CounterUpdate{CountDiff: n})
}

// DecrementCounter subtracts n > 0 from a Counter's count.
func (s *SDK) DecrementCounter(ctx context.Context, name string, n int64) (Counter, error) {
	if n <= 0 {
		return Counter{}, fmt.Errorf("agones: DecrementCounter %q by %d; want more than 0", name, n)
	}
	return s.UpdateCounter(ctx, name, CounterUpdate{CountDiff: -n})
}

// GetList returns a List: GET /v1beta1/lists/{name}.
func (s *SDK) GetList(ctx context.Context, name string) (List, error) {
	if err := checkName("List", name); err != nil {
		return List{}, err
	}
	return s.listCall(ctx, call{name: "GetList " + name, method: "GET", path: "/v1beta1/lists/" + url.PathEscape(name), idempotent: true})
}

// MaxListCapacity is the largest List capacity Agones allows.
const MaxListCapacity = 1000

// SetListCapacity sets a List's capacity (0 to MaxListCapacity):
// PATCH /v1beta1/lists/{name} {"capacity":"N"}. The gateway makes the
// update mask from the fields present, so the values are left alone.
func (s *SDK) SetListCapacity(ctx context.Context, name string, capacity int64) (List, error) {
	if err := checkName("List", name); err != nil {
		return List{}, err
	}
	if capacity < 0 || capacity > MaxListCapacity {
		return List{}, fmt.Errorf("agones: SetListCapacity %q to %d; allowed 0 to %d", name, capacity, MaxListCapacity)
	}
	return s.listCall(ctx, call{name: "SetListCapacity " + name, method: "PATCH", path: "/v1beta1/lists/" + url.PathEscape(name), in: wireListCapacity{i64(capacity)}, idempotent: true})
}

// SetListValues replaces all of a List's values:
// PATCH /v1beta1/lists/{name} {"values":[...]}.
func (s *SDK) SetListValues(ctx context.Context, name string, values []string) (List, error) {
	if err := checkName("List", name); err != nil {
		return List{}, err
	}
	if values == nil {
		values = []string{}
	}
	return s.listCall(ctx, call{name: "SetListValues " + name, method: "PATCH", path: "/v1beta1/lists/" + url.PathEscape(name), in: wireListValues{Values: values}, idempotent: true})
}

// AddListValue adds a value to a List and returns the List:
// POST /v1beta1/lists/{name}:addValue {"value":...}. The sidecar refuses a
// value already present or a List at capacity.
func (s *SDK) AddListValue(ctx context.Context, name, value string) (List, error) {
	if err := checkName("List", name); err != nil {
		return List{}, err
	}
	return s.listCall(ctx, call{name: "AddListValue " + name, method: "POST", path: "/v1beta1/lists/" + url.PathEscape(name) + ":addValue", in: wireValue{value}})
}

// RemoveListValue removes a value from a List and returns the List:
// POST /v1beta1/lists/{name}:removeValue {"value":...}. The sidecar refuses
// a value not present.
func (s *SDK) RemoveListValue(ctx context.Context, name, value string) (List, error) {
	if err := checkName("List", name); err != nil {
		return List{}, err
	}
	return s.listCall(ctx, call{name: "RemoveListValue " + name, method: "POST", path: "/v1beta1/lists/" + url.PathEscape(name) + ":removeValue", in: wireValue{value}})
}

// counterCall makes c and returns the Counter it answers.
func (s *SDK) counterCall(ctx context.Context, c call) (Counter, error) {
	var w wireCounter
	c.out = &w
	if err := s.do(ctx, c); err != nil {
		return Counter{}, err
	}
	return w.counter(), nil
}

// listCall makes c and returns the List it answers.
func (s *SDK) listCall(ctx context.Context, c call) (List, error) {
	var w wireList
	c.out = &w
	if err := s.do(ctx, c); err != nil {
		return List{}, err
	}
	return w.list(), nil
}
