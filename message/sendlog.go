package message

import "time"

// sendLog lists a reliable channel's sends in the order they happened, so
// that WritePacket finds the messages due for a resend at its head
// instead of scanning the window. A message has one live entry: its
// latest send; entries of messages acked or sent again since are stale
// and dropped when met.
type sendLog struct {
	entries []logEntry
	head, n int
}

type logEntry struct {
	at time.Duration
	id uint16
}

func (l *sendLog) init(queue int) { l.entries = make([]logEntry, 2*queue) }

func (l *sendLog) reset() { l.head, l.n = 0, 0 }

func (l *sendLog) front() (logEntry, bool) {
	if l.n == 0 {
		return logEntry{}, false
	}
	return l.entries[l.head], true
}

func (l *sendLog) pop() {
	l.head = (l.head + 1) % len(l.entries)
	l.n--
}

// push logs a send. When the log is full the stale entries are dropped
// first: at most one entry a queued message is live, and the log holds
// two a message, so there is always room after.
func (l *sendLog) push(e logEntry, live func(logEntry) bool) {
	if l.n == len(l.entries) {
		k := 0
		for i := range l.n {
			x := l.entries[(l.head+i)%len(l.entries)]
			if live(x) {
				l.entries[(l.head+k)%len(l.entries)] = x
				k++
			}
		}
		l.n = k
	}
	l.entries[(l.head+l.n)%len(l.entries)] = e
	l.n++
}
