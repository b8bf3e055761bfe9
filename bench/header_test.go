package bench

import (
	"testing"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
)

func testPacketKey(t testing.TB) *aead.PacketKey {
	t.Helper()
	k := make([]byte, codec.KeyBytes)
	k[0] = 7
	key, err := aead.NewPacketKey(k, testProtocolID)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// TestReadPayloadHeader: the header of every payload packet the codec
// writes reads back with its sequence and payload size, and the codec,
// opening the same packet, agrees.
func TestReadPayloadHeader(t *testing.T) {
	key := testPacketKey(t)
	buf := make([]byte, codec.MaxPacketBytes)
	for _, seq := range []uint64{0, 1, 255, 256, 1 << 40, ^uint64(0)} {
		for _, size := range []int{1, 16, 300, codec.MaxPayloadBytes} {
			n, err := codec.WritePayloadPacket(buf, seq, make([]byte, size), key)
			if err != nil {
				t.Fatal(err)
			}
			gotSeq, gotSize, ok := readPayloadHeader(buf[:n])
			if !ok || gotSeq != seq || gotSize != size {
				t.Fatalf("seq %d size %d: read %d %d %v", seq, size, gotSeq, gotSize, ok)
			}
			rp := codec.ReadParams{Role: codec.RoleClient, ProtocolID: testProtocolID, Key: key}
			var p codec.Packet
			if err := codec.ReadPacket(buf[:n], &rp, &p); err != nil || p.Sequence != seq || len(p.Payload) != size {
				t.Fatalf("codec: %v seq %d size %d", err, p.Sequence, len(p.Payload))
			}
		}
	}
}

func TestReadPayloadHeaderRejects(t *testing.T) {
	key := testPacketKey(t)
	buf := make([]byte, codec.MaxPacketBytes)
	ka, err := codec.WriteKeepAlivePacket(buf, 9, 0, 1, key)
	if err != nil {
		t.Fatal(err)
	}
	keepAlive := append([]byte(nil), buf[:ka]...)
	tests := []struct {
		name string
		pkt  []byte
	}{
		{"empty", nil},
		{"request prefix", append([]byte{0}, make([]byte, 40)...)},
		{"keep-alive", keepAlive},
		{"no sequence bytes", append([]byte{byte(codec.ConnectionPayload)}, make([]byte, 40)...)},
		{"nine sequence bytes", append([]byte{byte(codec.ConnectionPayload) | 9<<4}, make([]byte, 40)...)},
		{"no room for a payload", append([]byte{byte(codec.ConnectionPayload) | 1<<4}, make([]byte, 1+codec.MACBytes)...)},
	}
	for _, tt := range tests {
		if _, _, ok := readPayloadHeader(tt.pkt); ok {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}

// FuzzReadPayloadHeader: any input is read without panicking, and what is
// accepted is consistent with its length and prefix.
func FuzzReadPayloadHeader(f *testing.F) {
	key := testPacketKey(f)
	buf := make([]byte, codec.MaxPacketBytes)
	n, err := codec.WritePayloadPacket(buf, 1<<20, make([]byte, 300), key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(buf[:n])
	f.Fuzz(func(t *testing.T, pkt []byte) {
		seq, size, ok := readPayloadHeader(pkt)
		if !ok {
			return
		}
		seqBytes := int(pkt[0] >> 4)
		if size < 1 || 1+seqBytes+size+codec.MACBytes != len(pkt) {
			t.Fatalf("size %d from %d bytes with %d sequence bytes", size, len(pkt), seqBytes)
		}
		if seqBytes < 8 && seq>>(8*seqBytes) != 0 {
			t.Fatalf("sequence %d does not fit %d bytes", seq, seqBytes)
		}
	})
}
