package engine

import (
	"fmt"
	"reflect"
	"testing"
)

// TestServerStatsAdd: summing shards covers every counter, so a field added
// to ServerStats without a line in add fails here. Connected and the
// token-history gauges are the server's, set by Stats, not summed.
func TestServerStatsAdd(t *testing.T) {
	var one ServerStats
	v := reflect.ValueOf(&one).Elem()
	var fill func(reflect.Value)
	fill = func(f reflect.Value) {
		switch f.Kind() {
		case reflect.Uint64, reflect.Uint8:
			f.SetUint(1)
		case reflect.Int:
			f.SetInt(1)
		case reflect.Array:
			for i := range f.Len() {
				fill(f.Index(i))
			}
		case reflect.Struct:
			for i := range f.NumField() {
				fill(f.Field(i))
			}
		}
	}
	fill(v)
	var sum ServerStats
	sum.add(&one)
	sum.add(&one)
	s := reflect.ValueOf(sum)
	for i := range s.NumField() {
		name := s.Type().Field(i).Name
		want := uint64(2)
		switch name {
		case "ShedShift":
			want = 1 // the largest, not the sum
		case "Connected", "TokenHistoryPending", "TokenHistoryConsumed", "TokenHistorySize":
			want = 0
		}
		check := func(f reflect.Value, at string) {
			var got uint64
			if f.Kind() == reflect.Int {
				got = uint64(f.Int())
			} else {
				got = f.Uint()
			}
			if got != want {
				t.Errorf("%s%s = %d after adding two shards with 1, want %d", name, at, got, want)
			}
		}
		if f := s.Field(i); f.Kind() == reflect.Array {
			for j := range f.Len() {
				check(f.Index(j), fmt.Sprintf("[%d]", j))
			}
		} else {
			check(f, "")
		}
	}
}
