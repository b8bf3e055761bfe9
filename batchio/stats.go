package batchio

// MmsgStats are a socket's counters. They are updated atomically and can be
// read from any goroutine.
type MmsgStats struct {
	RecvCalls, RecvPackets uint64 // system calls and datagrams received
	SendCalls, SendPackets uint64 // system calls and datagrams sent
	SendRetries            uint64 // EINTR/EAGAIN/ENOBUFS retries
	SendDropped            uint64 // datagrams dropped after errors or retries
	GSOBatches             uint64 // GSO headers sent, each 2 to 64 of SendPackets
	Truncated              uint64 // received datagrams longer than the buffer
	Waits                  uint64 // WaitRead calls that parked
	RecvBufferGot          int    // the receive buffer the kernel granted
	SendBufferGot          int    // the send buffer the kernel granted
}

// StatsReader is a socket that counts its system calls and datagrams
// (MmsgConn on Linux).
type StatsReader interface {
	Stats() MmsgStats
}
