package engine

import "fmt"

// IDString is how logs write protocol and client ids: 0x and 16 hex
// digits, fixed width, so an id reads the same in every line and as a
// JSON string (a JSON number loses 64-bit ids to float precision).
func IDString(id uint64) string { return fmt.Sprintf("0x%016x", id) }
