package backend

import (
	"strings"
	"testing"
)

const sampleMetrics = `# HELP netcode_connected_clients Connected clients per shard.
# TYPE netcode_connected_clients gauge
netcode_connected_clients{shard="0"} 3
netcode_connected_clients{shard="1"} 4
# HELP netcode_max_clients Client slots.
# TYPE netcode_max_clients gauge
netcode_max_clients 64
netcode_connected_clients_total 999
netcode_max_clients_limit{x="y"} 1
go_goroutines 12
`

func TestParseMetrics(t *testing.T) {
	tests := []struct {
		name           string
		text           string
		connected, max int64
		err            string
	}{
		{"sample", sampleMetrics, 7, 64, ""},
		{"no labels, timestamps, tabs, CRLF", "netcode_connected_clients 5 1700000000000\r\nnetcode_max_clients\t10\r\n", 5, 10, ""},
		{"float forms", "netcode_connected_clients{shard=\"0\"} 2.0\nnetcode_max_clients 1e2\n", 2, 100, ""},
		{"escaped label values", `netcode_connected_clients{shard="a\"}b",zone="x\\"} 1` + "\n" + `netcode_connected_clients{ shard = "}" , } 2` + "\nnetcode_max_clients 8\n", 3, 8, ""},
		{"quoted label name", `netcode_connected_clients{"shard.id"="0"} 1` + "\nnetcode_max_clients 2\n", 1, 2, ""},
		{"OpenMetrics EOF", "netcode_connected_clients 0\nnetcode_max_clients 1\n# EOF\n", 0, 1, ""},
		{"other metrics may be malformed", "go_x{{{ not a sample\n{\"weird.name\"} 1\nnetcode_connected_clients 1\nnetcode_max_clients 2\n", 1, 2, ""},
		{"no connected", "netcode_max_clients 2\n", 0, 0, "no netcode_connected_clients series"},
		{"no max", "netcode_connected_clients 1\n", 0, 0, "0 netcode_max_clients series; want 1"},
		{"two max", "netcode_connected_clients 1\nnetcode_max_clients 2\nnetcode_max_clients{a=\"b\"} 2\n", 0, 0, "2 netcode_max_clients series; want 1"},
		{"negative", "netcode_connected_clients -1\nnetcode_max_clients 2\n", 0, 0, "value -1; want a whole number"},
		{"fraction", "netcode_connected_clients 1.5\nnetcode_max_clients 2\n", 0, 0, "value 1.5"},
		{"NaN", "netcode_connected_clients NaN\nnetcode_max_clients 2\n", 0, 0, "value NaN"},
		{"Inf", "netcode_connected_clients 1\nnetcode_max_clients +Inf\n", 0, 0, "value +Inf"},
		{"huge", "netcode_connected_clients 1\nnetcode_max_clients 1e10\n", 0, 0, "value 1e+10"},
		{"sum too big", strings.Repeat("netcode_connected_clients 2147483648\n", 2) + "netcode_max_clients 1\n", 0, 0, "sum over 2147483648"},
		{"not a number", "netcode_connected_clients many\nnetcode_max_clients 2\n", 0, 0, "not a number"},
		{"no value", "netcode_connected_clients\nnetcode_max_clients 2\n", 0, 0, "want a space and a value"},
		{"no value after labels", "netcode_connected_clients{a=\"b\"}\n", 0, 0, "want a space and a value"},
		{"unterminated label", "netcode_connected_clients{a=\"b} 1\n", 0, 0, "unterminated"},
		{"label without value", "netcode_connected_clients{a} 1\n", 0, 0, "want = after a label name"},
		{"unquoted label value", "netcode_connected_clients{a=b} 1\n", 0, 0, "want a quoted label value"},
		{"bad label separator", "netcode_connected_clients{a=\"b\";c=\"d\"} 1\n", 0, 0, "want , or }"},
		{"empty label name", "netcode_connected_clients{=\"b\"} 1\n", 0, 0, "bad label name"},
		{"long line", "netcode_connected_clients 1\n# " + strings.Repeat("x", maxMetricsLine) + "\n", 0, 0, "a line over 65536 bytes"},
		{"long body", strings.Repeat("# "+strings.Repeat("x", 1000)+"\n", 1100), 0, 0, "more than 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			load, err := parseMetrics(strings.NewReader(tt.text))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v; want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || load.connected != tt.connected || load.max != tt.max {
				t.Fatalf("got %+v, %v; want connected %d max %d", load, err, tt.connected, tt.max)
			}
		})
	}
}
