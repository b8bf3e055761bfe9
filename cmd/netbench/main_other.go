//go:build !linux

// Command netbench measures a netcode server. It needs Linux: its sockets
// are batchio's recvmmsg/sendmmsg sockets.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "netbench: needs Linux (batch UDP sockets, CPU pinning)")
	os.Exit(1)
}
