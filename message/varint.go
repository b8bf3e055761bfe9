package message

// Varints are unsigned LEB128, at most 5 bytes (32 bits), and canonical:
// a reader refuses a longer encoding of a value than the shortest, so that
// every packet has one encoding.

const maxVarintLen = 5

// varintLen is the encoded length of v.
func varintLen(v uint32) int {
	switch {
	case v < 1<<7:
		return 1
	case v < 1<<14:
		return 2
	case v < 1<<21:
		return 3
	case v < 1<<28:
		return 4
	}
	return 5
}

// putVarint writes v at dst[0:] and returns its length; dst must have room.
func putVarint(dst []byte, v uint32) int {
	i := 0
	for v >= 0x80 {
		dst[i] = byte(v) | 0x80
		v >>= 7
		i++
	}
	dst[i] = byte(v)
	return i + 1
}

// readVarint reads a canonical varint from src. n is 0 when src ends
// early, is not canonical, or overflows 32 bits.
func readVarint(src []byte) (v uint32, n int) {
	var shift uint
	for i := 0; i < maxVarintLen && i < len(src); i++ {
		b := src[i]
		if i == maxVarintLen-1 && b > 0x0f {
			return 0, 0 // more than 32 bits
		}
		v |= uint32(b&0x7f) << shift
		if b < 0x80 {
			if b == 0 && i > 0 {
				return 0, 0 // a trailing zero group: not the shortest form
			}
			return v, i + 1
		}
		shift += 7
	}
	return 0, 0
}
