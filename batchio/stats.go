package batchio

// Stats are a socket's counters and settings. The counters are updated
// atomically, so Stats may be called from any goroutine. A conn fills in
// what it can tell; the rest stays 0.
type Stats struct {
	RecvCalls, RecvPackets uint64 // receive system calls and datagrams returned by ReadBatch
	SendCalls, SendPackets uint64 // send system calls and datagrams sent
	SendRetries            uint64 // EINTR/EAGAIN/ENOBUFS retries
	SendDropped            uint64 // datagrams dropped after errors or retries, or unsendable
	GSOBatches             uint64 // GSO headers sent, each 2 to 64 of SendPackets
	Truncated              uint64 // received datagrams longer than the buffer, dropped
	Waits                  uint64 // WaitRead (and WaitAny) calls that parked
	// RecvBufferWant and SendBufferWant are the socket buffer sizes asked
	// for (0: the system default), RecvBufferGot and SendBufferGot what
	// the kernel granted (0: unknown). Got < Want means bursts larger than
	// the buffer will be dropped: raise net.core.rmem_max/wmem_max or run
	// with CAP_NET_ADMIN.
	RecvBufferWant, RecvBufferGot int
	SendBufferWant, SendBufferGot int
	// GSO reports whether WriteBatch groups datagrams into GSO sends: GSO
	// was not disabled, the kernel has it, and the socket's first GSO send
	// did not fail in a way that blames it.
	GSO bool
	// BlockingWait reports that WaitRead blocks the calling OS thread in
	// poll(2) (Config.BlockingWait): the reading goroutine should be
	// locked to its thread.
	BlockingWait bool
	// SourceLimit reports that the socket's per-source limit is attached
	// (Config.SourceLimit). SourceLimitErr says why a limit asked for
	// with Optional is not: eBPF is unavailable.
	SourceLimit    bool
	SourceLimitErr error
}
