package reliable

import (
	"errors"
	"fmt"
)

// Pool is a fixed set of reassembly buffers shared by endpoints: a packet in
// reassembly needs up to Config.ReassemblyBufferBytes (16 KiB by default),
// and giving every endpoint FragmentReassemblyBufferSize of them (1 MiB by
// default) would not let a server hold many endpoints. All memory is
// allocated by NewPool.
//
// The rule when buffers run short: a fragment that would start a new
// reassembly is dropped (DropReassemblyPoolExhausted) when the pool has no
// free buffer or its endpoint already holds perEndpoint of them. A
// reassembly in progress is never evicted to make room; it only leaves as
// the C library's window rules say (it completes, a newer sequence moves
// the fragment window past it or takes its slot, or the endpoint is reset).
//
// Sizing: perEndpoint bounds what one peer can hold; the pool's size
// bounds the whole, and a pool smaller than perEndpoint × endpoints can be
// emptied by peers that each hold their share.
//
// A Pool is not safe for concurrent use: the endpoints sharing it must be
// owned by one goroutine (one engine shard).
type Pool struct {
	slab        []byte
	bufferBytes int
	free        []int32 // stack of free buffer indexes
	perEndpoint int
}

// NewPool returns a pool of buffers buffers, each big enough for cfg's
// reassemblies, of which one endpoint may hold at most perEndpoint at once.
func NewPool(cfg Config, buffers, perEndpoint int) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if buffers < 1 || buffers > 1<<24 {
		return nil, fmt.Errorf("reliable: pool of %d buffers; want 1 to %d", buffers, 1<<24)
	}
	if perEndpoint < 1 || perEndpoint > buffers {
		return nil, fmt.Errorf("reliable: %d buffers per endpoint; want 1 to the pool's %d", perEndpoint, buffers)
	}
	size := cfg.ReassemblyBufferBytes()
	if uint64(size)*uint64(buffers) > 1<<40 {
		return nil, errors.New("reliable: pool larger than 1 TiB")
	}
	p := &Pool{
		slab:        make([]byte, size*buffers),
		bufferBytes: size,
		free:        make([]int32, buffers),
		perEndpoint: perEndpoint,
	}
	for i := range p.free {
		// Hand out low indexes first: it keeps a lightly used pool's
		// working set small.
		p.free[i] = int32(buffers - 1 - i)
	}
	return p, nil
}

// Buffers returns the number of buffers in the pool.
func (p *Pool) Buffers() int { return len(p.slab) / p.bufferBytes }

// Free returns the number of buffers not held by any endpoint.
func (p *Pool) Free() int { return len(p.free) }

// BufferBytes returns the size of each buffer.
func (p *Pool) BufferBytes() int { return p.bufferBytes }

// PerEndpoint returns the most buffers one endpoint may hold.
func (p *Pool) PerEndpoint() int { return p.perEndpoint }

// get takes a free buffer, or returns -1.
func (p *Pool) get() int32 {
	n := len(p.free)
	if n == 0 {
		return -1
	}
	b := p.free[n-1]
	p.free = p.free[:n-1]
	return b
}

// put returns buffer b.
func (p *Pool) put(b int32) {
	p.free = append(p.free, b) // within capacity: b came from the stack
}

// buffer returns buffer b's bytes.
func (p *Pool) buffer(b int32) []byte {
	off := int(b) * p.bufferBytes
	return p.slab[off : off+p.bufferBytes : off+p.bufferBytes]
}
