package batchio

import "fmt"

// Per-source limit defaults. A netcode client sends at its game's tick
// rate (60 to 128 Hz at most in practice) plus keep-alives; with the
// reliable layer a large message goes out as fragments, up to 16 per
// packet by default (16 KiB in 1 KiB fragments), so 128 Hz of whole
// messages is 2,048 datagrams a second. The default is twice that, and a
// burst of one second's worth absorbs a client that stalled (a GC pause, a
// radio wake-up) and sends what it queued at once. A flood from one
// address is cut to this rate: 4,096 datagrams of 1,200 B are ~5 MB/s and
// a few milliseconds of a core a second to read and drop.
const (
	DefaultSourceRate    = 4096
	DefaultSourceBurst   = DefaultSourceRate
	DefaultSourceEntries = 16384
	maxSourceRate        = 1 << 30
	maxSourceEntries     = 1 << 22
)

// SourceLimit drops, in the kernel, the datagrams of any one source (IP
// address and port) beyond Rate a second with bursts of Burst, before
// they are queued on the socket: a flood from one address, even a
// connected player's, can then no longer fill the queue and push out the
// other players' datagrams. It is an eBPF socket filter (Linux, CAP_BPF
// or root, kernel 4.18 or later) that also does the socket's request
// shedding (Shedder). The zero value is off.
type SourceLimit struct {
	// Rate is the datagrams per second a source may send; 0 is off.
	// DefaultSourceRate suits any game; allowed 1 to 2^30.
	Rate int
	// Burst is how many datagrams a source may send at once, above Rate
	// (default Rate; allowed 1 to 2^30).
	Burst int
	// Entries is how many sources the kernel tracks (an LRU map: the
	// least recently heard is forgotten, so it starts afresh with a full
	// burst). Default DefaultSourceEntries (~1.5 MiB of kernel memory);
	// allowed 16 to 2^22.
	Entries int
	// Optional opens the socket without the limit where eBPF is
	// unavailable (another OS, no CAP_BPF, an old kernel) instead of
	// failing; Stats.SourceLimitErr then says why.
	Optional bool
}

// SourceLimiter is a conn that can limit each source's rate in the kernel
// (Config.SourceLimit; Listen's sockets on Linux).
type SourceLimiter interface {
	// SourceDrops returns how many datagrams the per-source limit has
	// dropped: 0 if it is off. It is a system call, safe from any
	// goroutine, and does not allocate.
	SourceDrops() uint64
}

func (l *SourceLimit) validate() error {
	if l.Rate == 0 {
		return nil
	}
	if l.Rate < 0 || l.Rate > maxSourceRate {
		return fmt.Errorf("batchio: source limit rate %d/s; allowed 1 to %d (0 is off)", l.Rate, maxSourceRate)
	}
	if l.Burst == 0 {
		l.Burst = l.Rate
	}
	if l.Burst < 1 || l.Burst > maxSourceRate {
		return fmt.Errorf("batchio: source limit burst %d; allowed 1 to %d (0 means the rate)", l.Burst, maxSourceRate)
	}
	if l.Entries == 0 {
		l.Entries = DefaultSourceEntries
	}
	if l.Entries < 16 || l.Entries > maxSourceEntries {
		return fmt.Errorf("batchio: source limit entries %d; allowed 16 to %d (0 means %d)", l.Entries, maxSourceEntries, DefaultSourceEntries)
	}
	return nil
}
