package message

import "unsafe"

// Footprint returns the bytes of the Conn's buffers, all made by New:
// about what one connection costs (queues of MaxMessageSize slots both
// ways, a block buffer to receive into, sent-packet records). A block
// being sent is the caller's buffer.
func (c *Conn) Footprint() int {
	n := int(unsafe.Sizeof(*c)) + len(c.order)*int(unsafe.Sizeof(0))
	n += len(c.records.recs)*int(unsafe.Sizeof(record{})) + len(c.records.entries)*int(unsafe.Sizeof(entry{}))
	for i := range c.chans {
		ch := &c.chans[i]
		n += int(unsafe.Sizeof(*ch))
		n += len(ch.rs.slots)*int(unsafe.Sizeof(sendSlot{})) + len(ch.rs.data) + len(ch.rs.log.entries)*int(unsafe.Sizeof(logEntry{}))
		n += len(ch.rs.blk.acked) + len(ch.rs.blk.sentAt)*8 // the block itself is the caller's
		n += len(ch.rr.slots)*int(unsafe.Sizeof(recvSlot{})) + len(ch.rr.data) + 2*len(ch.rr.ready)
		n += len(ch.rr.blk.data) + len(ch.rr.blk.got)
		n += 4*len(ch.us.lens) + len(ch.us.data) + 4*len(ch.ur.lens) + len(ch.ur.data)
	}
	return n
}
