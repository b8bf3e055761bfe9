package reliable_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/netcode-go/netcode/reliable"
)

type jsonFigures struct {
	RTT                  float64  `json:"rtt"`
	RTTMin               float64  `json:"rtt_min"`
	RTTMax               float64  `json:"rtt_max"`
	RTTAvg               float64  `json:"rtt_avg"`
	JitterAvgVsMinRTT    float64  `json:"jitter_avg_vs_min_rtt"`
	JitterMaxVsMinRTT    float64  `json:"jitter_max_vs_min_rtt"`
	JitterStddevVsAvgRTT float64  `json:"jitter_stddev_vs_avg_rtt"`
	PacketLoss           float64  `json:"packet_loss"`
	SentKbps             float64  `json:"sent_bandwidth_kbps"`
	ReceivedKbps         float64  `json:"received_bandwidth_kbps"`
	AckedKbps            float64  `json:"acked_bandwidth_kbps"`
	Counters             []uint64 `json:"counters"`
}

// within is the vectors README's tolerance.
func within(got float32, want float64) bool {
	w := float64(float32(want))
	return math.Abs(float64(got)-w) <= 1e-5*math.Abs(w)+1e-3
}

// compareFigures returns the first figure outside the tolerance, and how
// many of the 11 were bit-exact.
func compareFigures(s reliable.Stats, c reliable.Counters, w jsonFigures) (int, error) {
	figures := []struct {
		name string
		got  float32
		want float64
	}{
		{"rtt", s.RTT, w.RTT},
		{"rtt_min", s.RTTMin, w.RTTMin},
		{"rtt_max", s.RTTMax, w.RTTMax},
		{"rtt_avg", s.RTTAvg, w.RTTAvg},
		{"jitter_avg_vs_min_rtt", s.JitterAvgVsMinRTT, w.JitterAvgVsMinRTT},
		{"jitter_max_vs_min_rtt", s.JitterMaxVsMinRTT, w.JitterMaxVsMinRTT},
		{"jitter_stddev_vs_avg_rtt", s.JitterStddevVsAvgRTT, w.JitterStddevVsAvgRTT},
		{"packet_loss", s.PacketLoss, w.PacketLoss},
		{"sent_bandwidth_kbps", s.SentKbps, w.SentKbps},
		{"received_bandwidth_kbps", s.ReceivedKbps, w.ReceivedKbps},
		{"acked_bandwidth_kbps", s.AckedKbps, w.AckedKbps},
	}
	exact := 0
	for _, f := range figures {
		if !within(f.got, f.want) {
			return exact, fmt.Errorf("%s = %v, want %v", f.name, f.got, float32(f.want))
		}
		if f.got == float32(f.want) {
			exact++
		}
	}
	if !slices.Equal(c[:], w.Counters) {
		return exact, fmt.Errorf("counters %v, want %v", c, w.Counters)
	}
	return exact, nil
}

func testStatsVectors(t *testing.T) {
	var file struct {
		Scenarios []struct {
			Name       string     `json:"name"`
			ConfigA    jsonConfig `json:"config_A"`
			ConfigB    jsonConfig `json:"config_B"`
			CreateTime float64    `json:"create_time"`
			WarmupPump int        `json:"warmup_pump"`
			Ticks      []struct {
				T         float64 `json:"t"`
				Deliver   []int   `json:"deliver"`
				Send      [2]int  `json:"send"`
				Datagrams [2]int  `json:"datagrams"`
			} `json:"ticks"`
			Samples []struct {
				Tick int         `json:"tick"`
				A    jsonFigures `json:"A"`
				B    jsonFigures `json:"B"`
			} `json:"samples"`
		} `json:"scenarios"`
	}
	loadVectors(t, "stats.json", &file)
	samples, exact, figures := 0, 0, 0
	for _, sc := range file.Scenarios {
		p := newPair(t, sc.ConfigA, sc.ConfigB)
		// reliable_endpoint_create(config, time): the clock starts there.
		p.ep[0].UpdateSeconds(sc.CreateTime)
		p.ep[1].UpdateSeconds(sc.CreateTime)
		p.pump(jsonStep{Count: sc.WarmupPump, ABytes: 1, BBytes: 1, AToB: true, BToA: true})

		type datagram struct {
			from  int
			bytes []byte
		}
		var sent []datagram
		next := 0
	ticks:
		for tick, tk := range sc.Ticks {
			p.ep[0].UpdateSeconds(tk.T)
			p.ep[1].UpdateSeconds(tk.T)
			for _, id := range tk.Deliver {
				if id < 0 || id >= len(sent) {
					t.Errorf("%s tick %d: no datagram %d", sc.Name, tick, id)
					break ticks
				}
				p.receive(1-sent[id].from, sent[id].bytes)
			}
			for i := range 2 {
				if tk.Send[i] == 0 {
					continue
				}
				_, dgs := p.send(i, make([]byte, tk.Send[i]))
				if len(dgs) != tk.Datagrams[i] {
					t.Errorf("%s tick %d: %d datagrams, want %d", sc.Name, tick, len(dgs), tk.Datagrams[i])
					break ticks
				}
				for _, dg := range dgs {
					sent = append(sent, datagram{i, dg})
				}
			}
			p.ep[0].ClearAcks()
			p.ep[1].ClearAcks()
			for ; next < len(sc.Samples) && sc.Samples[next].Tick == tick; next++ {
				s := sc.Samples[next]
				for i, w := range []jsonFigures{s.A, s.B} {
					n, err := compareFigures(p.ep[i].Stats(), p.ep[i].Counters(), w)
					if err != nil {
						t.Errorf("%s tick %d %s: %v", sc.Name, tick, "AB"[i:i+1], err)
					}
					exact += n
					figures += 11
				}
				samples++
			}
		}
		if next != len(sc.Samples) {
			t.Errorf("%s: %d of %d samples reached", sc.Name, next, len(sc.Samples))
		}
	}
	t.Logf("%d scenarios, %d samples, %d of %d figures bit-exact", len(file.Scenarios), samples, exact, figures)
	if samples == 0 {
		t.Error("no stats samples")
	}
}
