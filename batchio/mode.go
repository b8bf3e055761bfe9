package batchio

import "fmt"

// RecvMode selects how a socket receives. All modes read without blocking
// and park in WaitRead; they differ in the system calls used, which is what
// the benchmarks compare. On systems other than Linux every mode falls back
// to the portable socket.
type RecvMode int

const (
	// RecvMmsg reads batches with recvmmsg(MSG_DONTWAIT) made through
	// RawSyscall6, so a batch never hands the goroutine's P away, and waits on
	// Go's netpoller only after a read found nothing. The default.
	RecvMmsg RecvMode = iota
	// RecvBlock reads like RecvMmsg but waits in a blocking poll(2) on the
	// calling OS thread instead of the netpoller; lock the reading goroutine
	// to its thread (runtime.LockOSThread) to use it as intended.
	RecvBlock
	// RecvXNet reads batches with golang.org/x/net's PacketConn.ReadBatch
	// (recvmmsg through syscall.Syscall6); it allocates per message.
	RecvXNet
	// RecvSingle makes one recvfrom/sendto system call per datagram.
	RecvSingle
	numRecvModes
)

var recvModeNames = [numRecvModes]string{"mmsg", "block", "xnet", "single"}

func (m RecvMode) String() string {
	if m >= 0 && m < numRecvModes {
		return recvModeNames[m]
	}
	return fmt.Sprintf("RecvMode(%d)", int(m))
}

// ParseRecvMode parses "mmsg", "block", "xnet" or "single".
func ParseRecvMode(s string) (RecvMode, error) {
	for i, n := range recvModeNames {
		if n == s {
			return RecvMode(i), nil
		}
	}
	return 0, fmt.Errorf("batchio: unknown receive mode %q; want mmsg, block, xnet or single", s)
}
