package reliable_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/netcode-go/netcode/reliable"
)

type jsonDelivered struct {
	Sequence        uint16   `json:"sequence"`
	Payload         hexBytes `json:"payload"`
	ProcessReturned *bool    `json:"process_returned"`
}

type jsonStep struct {
	Op        string   `json:"op"`
	Ep        string   `json:"ep"`
	To        string   `json:"to"`
	ID        int      `json:"id"`
	Payload   hexBytes `json:"payload"`
	Bytes     hexBytes `json:"bytes"`
	Accept    bool     `json:"accept"`
	Sequence  uint16   `json:"sequence"`
	Datagrams []struct {
		ID    int      `json:"id"`
		Bytes hexBytes `json:"bytes"`
	} `json:"datagrams"`
	Delivered       []jsonDelivered `json:"delivered"`
	AcksBeforeClear []uint16        `json:"acks_before_clear"`

	Count          int            `json:"count"`
	ABytes         int            `json:"a_bytes"`
	BBytes         int            `json:"b_bytes"`
	AToB           bool           `json:"a_to_b"`
	BToA           bool           `json:"b_to_a"`
	AcksTotal      map[string]int `json:"acks_total"`
	DeliveredTotal map[string]int `json:"delivered_total"`

	Acks         map[string][]uint16 `json:"acks"`
	Counters     map[string][]uint64 `json:"counters"`
	NextSequence map[string]uint16   `json:"next_sequence"`
}

// pair is two endpoints driven as the vectors' harness drives the C ones.
type pair struct {
	t      *testing.T
	ep     [2]*reliable.Endpoint
	accept [2]bool
	sent   [][]byte // every datagram transmitted by send steps, by id
}

func side(name string) int {
	if name == "B" {
		return 1
	}
	return 0
}

func newPair(t *testing.T, a, b jsonConfig) *pair {
	return &pair{t: t, ep: [2]*reliable.Endpoint{newEndpoint(t, a), newEndpoint(t, b)}, accept: [2]bool{true, true}}
}

// receive hands a datagram to endpoint i, playing the process callback.
func (p *pair) receive(i int, datagram []byte) []jsonDelivered {
	d, _ := p.ep[i].Receive(datagram)
	if !d.Delivered {
		return nil
	}
	out := jsonDelivered{Sequence: d.Sequence, Payload: bytes.Clone(d.Payload)}
	if !p.accept[i] {
		if !p.ep[i].Refuse() {
			p.t.Fatal("Refuse right after a delivery returned false")
		}
		f := false
		out.ProcessReturned = &f
	}
	return []jsonDelivered{out}
}

// send sends payload from endpoint i and returns the sequence it was
// given (or would have been, for a payload too large to send) and its
// datagrams.
func (p *pair) send(i int, payload []byte) (uint16, [][]byte) {
	seq := p.ep[i].NextSequence()
	pk, err := p.ep[i].Send(payload)
	if err != nil {
		return seq, nil
	}
	if pk.Sequence() != seq {
		p.t.Fatalf("Send used sequence %d, NextSequence said %d", pk.Sequence(), seq)
	}
	return seq, datagrams(p.t, pk)
}

// pump runs the vectors' pump op and returns the acks and deliveries per
// endpoint.
func (p *pair) pump(st jsonStep) (acks, delivered [2]int) {
	sizes := [2]int{st.ABytes, st.BBytes}
	forward := [2]bool{st.AToB, st.BToA}
	for range st.Count {
		for i := range 2 {
			if sizes[i] <= 0 {
				continue
			}
			s := p.ep[i].NextSequence()
			payload := make([]byte, sizes[i])
			for j := range payload {
				payload[j] = byte(int(s) + j)
			}
			_, dgs := p.send(i, payload)
			if !forward[i] {
				continue
			}
			for _, dg := range dgs {
				delivered[1-i] += len(p.receive(1-i, dg))
			}
		}
		for i := range 2 {
			acks[i] += len(p.ep[i].Acks())
			p.ep[i].ClearAcks()
		}
	}
	return acks, delivered
}

func (p *pair) step(st jsonStep) error {
	var delivered []jsonDelivered
	switch st.Op {
	case "send":
		i := side(st.Ep)
		seq, dgs := p.send(i, st.Payload)
		if seq != st.Sequence {
			return fmt.Errorf("sequence %d, want %d", seq, st.Sequence)
		}
		if len(dgs) != len(st.Datagrams) {
			return fmt.Errorf("%d datagrams, want %d", len(dgs), len(st.Datagrams))
		}
		for k, dg := range dgs {
			if want := st.Datagrams[k]; want.ID != len(p.sent) || !bytes.Equal(dg, want.Bytes) {
				return fmt.Errorf("datagram %d = %x, want id %d %x", len(p.sent), dg, want.ID, []byte(want.Bytes))
			}
			p.sent = append(p.sent, dg)
		}
	case "deliver":
		if st.ID < 0 || st.ID >= len(p.sent) {
			return fmt.Errorf("no datagram %d", st.ID)
		}
		delivered = p.receive(side(st.To), p.sent[st.ID])
	case "drop":
	case "inject":
		delivered = p.receive(side(st.To), st.Bytes)
	case "process_result":
		p.accept[side(st.Ep)] = st.Accept
	case "clear_acks":
		i := side(st.Ep)
		if got := p.ep[i].Acks(); !slices.Equal(got, st.AcksBeforeClear) && len(got)+len(st.AcksBeforeClear) > 0 {
			return fmt.Errorf("acks before clear %v, want %v", got, st.AcksBeforeClear)
		}
		p.ep[i].ClearAcks()
	case "reset":
		p.ep[side(st.Ep)].Reset()
	case "pump":
		acks, del := p.pump(st)
		for i, name := range []string{"A", "B"} {
			if acks[i] != st.AcksTotal[name] || del[i] != st.DeliveredTotal[name] {
				return fmt.Errorf("pump %s: %d acks, %d delivered; want %d, %d", name, acks[i], del[i], st.AcksTotal[name], st.DeliveredTotal[name])
			}
		}
	default:
		return fmt.Errorf("unknown op %q", st.Op)
	}
	if st.Op == "deliver" || st.Op == "inject" {
		if len(delivered) != len(st.Delivered) {
			return fmt.Errorf("delivered %d packets, want %d", len(delivered), len(st.Delivered))
		}
		for k, d := range delivered {
			w := st.Delivered[k]
			gotRet, wantRet := d.ProcessReturned == nil, w.ProcessReturned == nil || *w.ProcessReturned
			if d.Sequence != w.Sequence || !bytes.Equal(d.Payload, w.Payload) || gotRet != wantRet {
				return fmt.Errorf("delivered %d %x (accepted %v), want %d %x (%v)", d.Sequence, []byte(d.Payload), gotRet, w.Sequence, []byte(w.Payload), wantRet)
			}
		}
	}
	return nil
}

// check compares both endpoints with a step's results.
func (p *pair) check(st jsonStep, clear bool) error {
	for i, name := range []string{"A", "B"} {
		e := p.ep[i]
		if got, want := e.Acks(), st.Acks[name]; !slices.Equal(got, want) && len(got)+len(want) > 0 {
			return fmt.Errorf("%s acks %v, want %v", name, got, want)
		}
		c := e.Counters()
		if !slices.Equal(c[:], st.Counters[name]) {
			return fmt.Errorf("%s counters %v, want %v", name, c, st.Counters[name])
		}
		if got := e.NextSequence(); got != st.NextSequence[name] {
			return fmt.Errorf("%s next sequence %d, want %d", name, got, st.NextSequence[name])
		}
	}
	if clear {
		p.ep[0].ClearAcks()
		p.ep[1].ClearAcks()
	}
	return nil
}

func testAckScenarioVectors(t *testing.T) {
	var file struct {
		Scenarios []struct {
			Name    string     `json:"name"`
			ConfigA jsonConfig `json:"config_A"`
			ConfigB jsonConfig `json:"config_B"`
			Clear   bool       `json:"clear_acks_after_each_step"`
			Steps   []jsonStep `json:"steps"`
		} `json:"scenarios"`
	}
	loadVectors(t, "ack_scenarios.json", &file)
	steps := 0
	for _, sc := range file.Scenarios {
		p := newPair(t, sc.ConfigA, sc.ConfigB)
		for k, st := range sc.Steps {
			err := p.step(st)
			if err == nil {
				err = p.check(st, sc.Clear)
			}
			if err != nil {
				t.Errorf("%s step %d (%s): %v", sc.Name, k, st.Op, err)
				break
			}
			steps++
		}
	}
	t.Logf("%d scenarios, %d steps", len(file.Scenarios), steps)
	if len(file.Scenarios) == 0 {
		t.Error("no ack scenarios")
	}
}
