package codec

import "encoding/binary"

// The associated data and nonces the AEADs are given are part of the wire
// format (a peer must build the same bytes), so they are built here and
// package aead only calls these.

// PutPacketAssociatedData writes version info, protocol id and prefix byte
// into ad[:22].
func PutPacketAssociatedData(ad []byte, protocolID uint64, prefix byte) {
	_ = ad[PacketAssociatedDataBytes-1]
	copy(ad, VersionInfo[:])
	binary.LittleEndian.PutUint64(ad[VersionInfoBytes:], protocolID)
	ad[VersionInfoBytes+8] = prefix
}

// PutTokenAssociatedData writes version info, protocol id and expire
// timestamp into ad[:29].
func PutTokenAssociatedData(ad []byte, protocolID, expireTimestamp uint64) {
	_ = ad[TokenAssociatedDataBytes-1]
	copy(ad, VersionInfo[:])
	binary.LittleEndian.PutUint64(ad[VersionInfoBytes:], protocolID)
	binary.LittleEndian.PutUint64(ad[VersionInfoBytes+8:], expireTimestamp)
}

// PutSequenceNonce writes the 12-byte nonce of packets and challenge
// tokens: four zero bytes, then the sequence little-endian.
func PutSequenceNonce(nonce []byte, sequence uint64) {
	_ = nonce[11]
	nonce[0], nonce[1], nonce[2], nonce[3] = 0, 0, 0, 0
	binary.LittleEndian.PutUint64(nonce[4:], sequence)
}
