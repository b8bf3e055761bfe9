package message

// Message ids and packet sequences are 16-bit and wrap; a is newer than b
// when it is less than half the space ahead.

func seqGreater(a, b uint16) bool { return int16(a-b) > 0 }

func seqLess(a, b uint16) bool { return int16(a-b) < 0 }
