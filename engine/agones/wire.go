package agones

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// The gateway's JSON is protojson with UseProtoNames and EmitUnpopulated
// (agones pkg/util/runtime.NewServerMux): field names are the proto names
// (object_meta, playerID, countDiff), and every int64 travels as a decimal
// string ("count":"5") while int32 stays a number ("port":7777). The wire
// types below mirror that; the exported types carry plain Go integers.

// i64 is a proto int64 in JSON: written as a quoted decimal, read from a
// quoted decimal or a bare integer (protojson accepts both).
type i64 int64

func (v i64) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 22)
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(v), 10)
	return append(b, '"'), nil
}

func (v *i64) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	s := b
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	n, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil {
		return fmt.Errorf("agones: int64 field %q is not a decimal integer", excerpt(b, 32))
	}
	*v = i64(n)
	return nil
}

// excerpt returns at most n bytes of b, for error messages.
func excerpt(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// Request bodies.
type (
	wireEmpty    struct{}
	wireDuration struct {
		Seconds i64 `json:"seconds"`
	}
	wireKeyValue struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	// wireCounterUpdate is beta CounterUpdateRequest; count and capacity are
	// Int64Value wrappers, so absent means "leave alone".
	wireCounterUpdate struct {
		Count     *i64 `json:"count,omitempty"`
		Capacity  *i64 `json:"capacity,omitempty"`
		CountDiff i64  `json:"countDiff,omitempty"`
	}
	// wireListCapacity and wireListValues are UpdateList bodies; the
	// gateway derives the field mask from the fields present
	// (runtime.FieldMaskFromRequestBody in pkg/sdk/beta/beta.pb.gw.go), so
	// the field left out is left alone.
	wireListCapacity struct {
		Capacity i64 `json:"capacity"`
	}
	wireListValues struct {
		Values []string `json:"values"`
	}
	wireValue struct {
		Value string `json:"value"`
	}
	wirePlayerID struct {
		PlayerID string `json:"playerID"`
	}
)

// Response bodies (Count is also the SetPlayerCapacity request).
type (
	wireCount struct {
		Count i64 `json:"count"`
	}
	wireBool struct {
		Bool bool `json:"bool"`
	}
	wirePlayerIDList struct {
		List []string `json:"list"`
	}
	wireCounter struct {
		Name     string `json:"name"`
		Count    i64    `json:"count"`
		Capacity i64    `json:"capacity"`
	}
	wireList struct {
		Name     string   `json:"name"`
		Capacity i64      `json:"capacity"`
		Values   []string `json:"values"`
	}
	wireGameServer struct {
		ObjectMeta struct {
			Name              string            `json:"name"`
			Namespace         string            `json:"namespace"`
			UID               string            `json:"uid"`
			ResourceVersion   string            `json:"resource_version"`
			Generation        i64               `json:"generation"`
			CreationTimestamp i64               `json:"creation_timestamp"`
			DeletionTimestamp i64               `json:"deletion_timestamp"`
			Annotations       map[string]string `json:"annotations"`
			Labels            map[string]string `json:"labels"`
		} `json:"object_meta"`
		Spec struct {
			Health struct {
				Disabled            bool  `json:"disabled"`
				PeriodSeconds       int32 `json:"period_seconds"`
				FailureThreshold    int32 `json:"failure_threshold"`
				InitialDelaySeconds int32 `json:"initial_delay_seconds"`
			} `json:"health"`
		} `json:"spec"`
		Status struct {
			State     string `json:"state"`
			Address   string `json:"address"`
			Addresses []struct {
				Type    string `json:"type"`
				Address string `json:"address"`
			} `json:"addresses"`
			Ports []struct {
				Name string `json:"name"`
				Port int32  `json:"port"`
			} `json:"ports"`
			Players *struct {
				Count    i64      `json:"count"`
				Capacity i64      `json:"capacity"`
				IDs      []string `json:"ids"`
			} `json:"players"`
			Counters map[string]struct {
				Count    i64 `json:"count"`
				Capacity i64 `json:"capacity"`
			} `json:"counters"`
			Lists map[string]struct {
				Capacity i64      `json:"capacity"`
				Values   []string `json:"values"`
			} `json:"lists"`
		} `json:"status"`
	}
)

// decodeGameServer parses a GET /gameserver body.
func decodeGameServer(data []byte) (*GameServer, error) {
	var w wireGameServer
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, err
	}
	m, h, st := &w.ObjectMeta, &w.Spec.Health, &w.Status
	gs := &GameServer{
		ObjectMeta: ObjectMeta{
			Name:              m.Name,
			Namespace:         m.Namespace,
			UID:               m.UID,
			ResourceVersion:   m.ResourceVersion,
			Generation:        int64(m.Generation),
			CreationTimestamp: int64(m.CreationTimestamp),
			DeletionTimestamp: int64(m.DeletionTimestamp),
			Labels:            m.Labels,
			Annotations:       m.Annotations,
		},
		Health: Health{
			Disabled:            h.Disabled,
			PeriodSeconds:       h.PeriodSeconds,
			FailureThreshold:    h.FailureThreshold,
			InitialDelaySeconds: h.InitialDelaySeconds,
		},
		Status: GameServerStatus{State: st.State, Address: st.Address},
	}
	for _, a := range st.Addresses {
		gs.Status.Addresses = append(gs.Status.Addresses, NodeAddress{Type: a.Type, Address: a.Address})
	}
	for _, p := range st.Ports {
		gs.Status.Ports = append(gs.Status.Ports, Port{Name: p.Name, Port: p.Port})
	}
	if p := st.Players; p != nil {
		gs.Status.Players = &PlayerStatus{Count: int64(p.Count), Capacity: int64(p.Capacity), IDs: p.IDs}
	}
	if len(st.Counters) > 0 {
		gs.Status.Counters = make(map[string]Counter, len(st.Counters))
		for k, c := range st.Counters {
			gs.Status.Counters[k] = Counter{Name: k, Count: int64(c.Count), Capacity: int64(c.Capacity)}
		}
	}
	if len(st.Lists) > 0 {
		gs.Status.Lists = make(map[string]List, len(st.Lists))
		for k, l := range st.Lists {
			gs.Status.Lists[k] = List{Name: k, Capacity: int64(l.Capacity), Values: l.Values}
		}
	}
	return gs, nil
}

func (w *wireCounter) counter() Counter {
	return Counter{Name: w.Name, Count: int64(w.Count), Capacity: int64(w.Capacity)}
}

func (w *wireList) list() List {
	return List{Name: w.Name, Capacity: int64(w.Capacity), Values: w.Values}
}

func ptr(v int64) *i64 { p := i64(v); return &p }
