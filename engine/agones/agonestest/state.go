package agonestest

import (
	"maps"
	"slices"
	"strconv"
	"time"
)

// gameServer is the fake's GameServer, guarded by Sidecar.mu.
type gameServer struct {
	name, namespace, uid string
	created              int64
	state                string
	address              string
	addresses            []Address
	ports                []Port
	healthPeriod         int32
	labels, annotations  map[string]string
	counters             map[string]*Counter
	lists                map[string]*List
	players              []string
	playerCap            int64
	reserveSeconds       int64
}

func newGameServer(cfg Config) gameServer {
	gs := gameServer{
		name:         or(cfg.Name, "local"),
		namespace:    or(cfg.Namespace, "default"),
		uid:          "1234",
		created:      time.Now().Unix(),
		state:        or(cfg.State, "Scheduled"),
		address:      or(cfg.Address, "127.0.0.1"),
		addresses:    slices.Clone(cfg.Addresses),
		ports:        slices.Clone(cfg.Ports),
		healthPeriod: cfg.HealthPeriodSeconds,
		labels:       maps.Clone(cfg.Labels),
		annotations:  maps.Clone(cfg.Annotations),
		counters:     make(map[string]*Counter),
		lists:        make(map[string]*List),
		playerCap:    cfg.PlayerCapacity,
	}
	if gs.addresses == nil {
		gs.addresses = []Address{{"InternalIP", gs.address}}
	}
	if gs.ports == nil {
		gs.ports = []Port{{"default", 7777}}
	}
	if gs.healthPeriod == 0 {
		gs.healthPeriod = 5
	}
	if gs.labels == nil {
		gs.labels = make(map[string]string)
	}
	if gs.annotations == nil {
		gs.annotations = make(map[string]string)
	}
	for k, c := range cfg.Counters {
		gs.counters[k] = &Counter{c.Count, c.Capacity}
	}
	for k, l := range cfg.Lists {
		gs.lists[k] = &List{l.Capacity, slices.Clone(l.Values)}
	}
	return gs
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// The JSON the gateway writes: protojson with UseProtoNames and
// EmitUnpopulated (agones pkg/util/runtime.NewServerMux), so snake_case
// proto names, every field present, int64 as a decimal string and int32
// as a number.

type (
	jsonCounter struct {
		Name     string `json:"name"`
		Count    int64  `json:"count,string"`
		Capacity int64  `json:"capacity,string"`
	}
	jsonList struct {
		Name     string   `json:"name"`
		Capacity int64    `json:"capacity,string"`
		Values   []string `json:"values"`
	}
	jsonCount struct {
		Count int64 `json:"count,string"`
	}
	jsonBool struct {
		Bool bool `json:"bool"`
	}
	jsonPlayerIDList struct {
		List []string `json:"list"`
	}
	jsonStatus struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Details []any  `json:"details"`
	}
)

func (gs *gameServer) json() map[string]any {
	s64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	addrs := make([]map[string]any, 0, len(gs.addresses))
	for _, a := range gs.addresses {
		addrs = append(addrs, map[string]any{"type": a.Type, "address": a.Address})
	}
	ports := make([]map[string]any, 0, len(gs.ports))
	for _, p := range gs.ports {
		ports = append(ports, map[string]any{"name": p.Name, "port": p.Port})
	}
	counters := make(map[string]any, len(gs.counters))
	for k, c := range gs.counters {
		counters[k] = map[string]any{"count": s64(c.Count), "capacity": s64(c.Capacity)}
	}
	lists := make(map[string]any, len(gs.lists))
	for k, l := range gs.lists {
		lists[k] = map[string]any{"capacity": s64(l.Capacity), "values": nonNil(l.Values)}
	}
	return map[string]any{
		"object_meta": map[string]any{
			"name":               gs.name,
			"namespace":          gs.namespace,
			"uid":                gs.uid,
			"resource_version":   "1",
			"generation":         "1",
			"creation_timestamp": s64(gs.created),
			"deletion_timestamp": "0",
			"annotations":        gs.annotations,
			"labels":             gs.labels,
		},
		"spec": map[string]any{
			"health": map[string]any{
				"disabled":              false,
				"period_seconds":        gs.healthPeriod,
				"failure_threshold":     3,
				"initial_delay_seconds": 5,
			},
		},
		"status": map[string]any{
			"state":     gs.state,
			"address":   gs.address,
			"addresses": addrs,
			"ports":     ports,
			"players": map[string]any{
				"count":    s64(int64(len(gs.players))),
				"capacity": s64(gs.playerCap),
				"ids":      nonNil(gs.players),
			},
			"counters": counters,
			"lists":    lists,
		},
	}
}

// nonNil makes an empty list encode as [] (EmitUnpopulated), not null.
func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}
