package message

// An entry is one thing a packet carried that its ack settles.
type entry struct {
	kind uint8
	ch   uint8
	id   uint16 // message id, or credit value
	frag uint16
}

const (
	entMessage uint8 = iota
	entFragment
	entCredit
)

// records remembers, per packet sequence (at seq % len), the entries the
// packet carried. The entries of all packets share one ring, written in
// packet order: a record whose entries were overwritten is as good as
// gone (its messages are resent on time instead).
type records struct {
	recs    []record
	entries []entry
	pos     uint64 // entries written since reset
}

type record struct {
	start uint64
	n     uint32
	seq   uint16
	valid bool
}

// init sizes the records: 32 entries a packet on average, and at least
// four packets of the most a budget-byte packet can carry (a message
// takes 2 bytes at least), since one packet may use a quarter of the ring
// (maxPerPacket).
func (r *records) init(packets, budget int) {
	r.recs = make([]record, packets)
	r.entries = make([]entry, max(packets*32, 4*budget/2))
}

func (r *records) reset() {
	clear(r.recs)
	r.pos = 0
}

// maxPerPacket is the most entries one packet may add.
func (r *records) maxPerPacket() int { return len(r.entries) / 4 }

// begin starts the record of packet seq.
func (r *records) begin(seq uint16) *record {
	rec := &r.recs[int(seq)%len(r.recs)]
	*rec = record{start: r.pos, seq: seq, valid: true}
	return rec
}

func (r *records) add(rec *record, e entry) {
	r.entries[r.pos%uint64(len(r.entries))] = e
	r.pos++
	rec.n++
}

// take returns the entries of packet seq and forgets the packet; nil when
// there is no (intact) record of it.
func (r *records) take(seq uint16) (a, b []entry) {
	rec := &r.recs[int(seq)%len(r.recs)]
	if !rec.valid || rec.seq != seq {
		return nil, nil
	}
	rec.valid = false
	n := uint64(len(r.entries))
	if r.pos-rec.start > n {
		return nil, nil // overwritten
	}
	lo := rec.start % n
	hi := lo + uint64(rec.n)
	if hi <= n {
		return r.entries[lo:hi], nil
	}
	return r.entries[lo:], r.entries[:hi-n]
}
