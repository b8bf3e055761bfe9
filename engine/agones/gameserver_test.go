package agones

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPublicAddrPort(t *testing.T) {
	ports := []Port{{"default", 7777}, {"game", 7654}}
	for _, tc := range []struct {
		name   string
		status GameServerStatus
		port   string
		want   string // or "" for an error
		errHas string
	}{
		{name: "ipv4 first port", status: GameServerStatus{Address: "203.0.113.1", Ports: ports}, want: "203.0.113.1:7777"},
		{name: "by name", status: GameServerStatus{Address: "203.0.113.1", Ports: ports}, port: "game", want: "203.0.113.1:7654"},
		{name: "ipv6", status: GameServerStatus{Address: "2001:db8::1", Ports: ports}, want: "[2001:db8::1]:7777"},
		{name: "mapped ipv4 unmapped", status: GameServerStatus{Address: "::ffff:203.0.113.1", Ports: ports}, want: "203.0.113.1:7777"},
		{name: "dns name, external ip", status: GameServerStatus{Address: "node.example", Addresses: []NodeAddress{{AddressInternalIP, "10.0.0.1"}, {AddressExternalIP, "203.0.113.2"}}, Ports: ports}, want: "203.0.113.2:7777"},
		{name: "dns name, internal ip", status: GameServerStatus{Address: "node.example", Addresses: []NodeAddress{{AddressHostname, "node"}, {AddressInternalIP, "10.0.0.1"}}, Ports: ports}, want: "10.0.0.1:7777"},
		{name: "bad external skipped", status: GameServerStatus{Address: "", Addresses: []NodeAddress{{AddressExternalIP, "nope"}, {AddressExternalIP, "0.0.0.0"}, {AddressInternalIP, "10.0.0.1"}}, Ports: ports}, want: "10.0.0.1:7777"},
		{name: "pod ip not used", status: GameServerStatus{Address: "node.example", Addresses: []NodeAddress{{AddressPodIP, "10.1.0.1"}}, Ports: ports}, errHas: "not an IP"},
		{name: "unspecified", status: GameServerStatus{Address: "0.0.0.0", Ports: ports}, errHas: "not an IP"},
		{name: "multicast", status: GameServerStatus{Address: "224.0.0.1", Ports: ports}, errHas: "not an IP"},
		{name: "zone", status: GameServerStatus{Address: "fe80::1%eth0", Ports: ports}, errHas: "not an IP"},
		{name: "no ports", status: GameServerStatus{Address: "203.0.113.1", State: StateScheduled}, errHas: "no ports"},
		{name: "unknown port name", status: GameServerStatus{Address: "203.0.113.1", Ports: ports}, port: "voice", errHas: `"default", "game"`},
		{name: "port 0", status: GameServerStatus{Address: "203.0.113.1", Ports: []Port{{"p", 0}}}, errHas: "1 to 65535"},
		{name: "port too big", status: GameServerStatus{Address: "203.0.113.1", Ports: []Port{{"p", 70000}}}, errHas: "1 to 65535"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := &GameServer{ObjectMeta: ObjectMeta{Name: "gs"}, Status: tc.status}
			ap, err := gs.PublicAddrPort(tc.port)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("got %v, %v; want an error mentioning %q", ap, err, tc.errHas)
				}
				return
			}
			if err != nil || ap.String() != tc.want {
				t.Fatalf("got %v, %v; want %s", ap, err, tc.want)
			}
		})
	}
}

func TestI64(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{`"5"`, 5, true},
		{`5`, 5, true},
		{`"-9223372036854775808"`, -1 << 63, true},
		{`null`, 0, true},
		{`"9223372036854775808"`, 0, false},
		{`""`, 0, false},
		{`"5.0"`, 0, false},
		{`true`, 0, false},
		{`"0x10"`, 0, false},
	} {
		var v i64
		err := json.Unmarshal([]byte(tc.in), &v)
		if (err == nil) != tc.ok || int64(v) != tc.want {
			t.Errorf("%s: got %d, %v; want %d, ok %v", tc.in, v, err, tc.want, tc.ok)
		}
	}
	b, _ := json.Marshal(struct {
		A i64  `json:"a"`
		B *i64 `json:"b,omitempty"`
	}{A: -3})
	if string(b) != `{"a":"-3"}` {
		t.Errorf("marshal: %s", b)
	}
}

// TestDecodeGameServerDoc decodes the REST guide's example response.
func TestDecodeGameServerDoc(t *testing.T) {
	const doc = `{
    "object_meta": {"name": "local", "namespace": "default", "uid": "1234", "resource_version": "v1",
        "generation": "1", "creation_timestamp": "1531795395",
        "annotations": {"annotation": "true"}, "labels": {"islocal": "true"}},
    "status": {"state": "Ready", "address": "127.0.0.1", "ports": [{"name": "default", "port": 7777}]}
}`
	gs, err := decodeGameServer([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	m := gs.ObjectMeta
	if m.Name != "local" || m.UID != "1234" || m.ResourceVersion != "v1" || m.Generation != 1 || m.CreationTimestamp != 1531795395 || m.Labels["islocal"] != "true" || m.Annotations["annotation"] != "true" {
		t.Errorf("meta %+v", m)
	}
	if ap, err := gs.PublicAddrPort(""); err != nil || ap.String() != "127.0.0.1:7777" || gs.Status.State != StateReady {
		t.Errorf("status %+v: %v %v", gs.Status, ap, err)
	}
}

// FuzzDecodeGameServer: any body decodes or fails cleanly, and an address
// picked from it is one a client can dial.
func FuzzDecodeGameServer(f *testing.F) {
	f.Add([]byte(`{"object_meta":{"name":"local","generation":"1"},"status":{"state":"Ready","address":"127.0.0.1","ports":[{"name":"default","port":7777}]}}`))
	f.Add([]byte(`{"status":{"address":"n.example","addresses":[{"type":"ExternalIP","address":"::ffff:1.2.3.4"}],"ports":[{"name":"a","port":70000}]}}`))
	f.Add([]byte(`{"status":{"players":{"count":"1","capacity":1,"ids":["a"]},"counters":{"c":{"count":"x"}},"lists":{"l":null}}}`))
	f.Add([]byte(`{"spec":{"health":{"period_seconds":"5"}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		gs, err := decodeGameServer(data)
		if err != nil {
			if gs != nil {
				t.Fatal("a GameServer with an error")
			}
			return
		}
		for _, name := range []string{"", "default", "a"} {
			ap, err := gs.PublicAddrPort(name)
			if err != nil {
				continue
			}
			if a := ap.Addr(); !ap.IsValid() || ap.Port() == 0 || a.IsUnspecified() || a.IsMulticast() || a.Zone() != "" || a.Is4In6() {
				t.Fatalf("picked %v", ap)
			}
		}
	})
}

// FuzzDecodeReplies: the smaller answers decode or fail cleanly, and an
// int64 read is written back as the same value.
func FuzzDecodeReplies(f *testing.F) {
	f.Add([]byte(`{"name":"rooms","count":"1","capacity":"10"}`))
	f.Add([]byte(`{"name":"players","capacity":"100","values":["player0","player1"]}`))
	f.Add([]byte(`{"count":"5"}`))
	f.Add([]byte(`{"bool":true}`))
	f.Add([]byte(`{"list":["uzh7i","3zh7i"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c wireCounter
		var l wireList
		var n wireCount
		var b wireBool
		var p wirePlayerIDList
		for _, v := range []any{&c, &l, &n, &b, &p} {
			_ = json.Unmarshal(data, v)
		}
		_, _ = c.counter(), l.list()
		if json.Unmarshal(data, &n) == nil {
			out, err := json.Marshal(n)
			var back wireCount
			if err != nil || json.Unmarshal(out, &back) != nil || back != n {
				t.Fatalf("%s -> %s -> %+v; want %+v", data, out, back, n)
			}
		}
	})
}
