//go:build linux

package main

import (
	"os"
	"testing"
)

// mainEnv makes the test binary netbench itself (for tests that run it
// as a command, and for the server child it starts, which inherits it).
const mainEnv = "NETBENCH_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) != "" {
		main()
	}
	os.Exit(m.Run())
}
