//go:build !linux

package batchio

import (
	"errors"
	"fmt"
	"time"
)

// waitAny cannot wait on several portable sockets at once: each has its
// own reader goroutine and wake channel.
func waitAny(_ time.Time, conns []Conn) error {
	return fmt.Errorf("batchio: WaitAny over %d conns needs Linux (wait on one conn): %w", len(conns), errors.ErrUnsupported)
}
