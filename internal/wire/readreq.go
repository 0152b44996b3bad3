package wire

import "encoding/binary"

// ReadRequestLen is the length of the RDMA Read Request header that follows
// the untagged DDP header (RFC 5040 §4.4).
const ReadRequestLen = 28

// ReadRequest is the RDMA Read Request header (RFC 5040 §4.4): where the
// response goes (Data Sink STag and TO, the requester's buffer), how many
// bytes (RDMARDSZ), and where they come from (Data Source STag and TO, the
// responder's buffer).
type ReadRequest struct {
	SinkSTag uint32 // Data Sink STag
	SinkTO   uint64 // Data Sink Tagged Offset
	Size     uint32 // RDMA Read Message Size (RDMARDSZ); 0 is legal
	SrcSTag  uint32 // Data Source STag
	SrcTO    uint64 // Data Source Tagged Offset
}

// ParseReadRequest decodes the Read Request header at the start of b, the
// bytes after the untagged DDP header. Bytes after the 28 header bytes are
// not looked at (ParseULPDU rejects them).
func ParseReadRequest(b []byte) (ReadRequest, error) {
	if len(b) < ReadRequestLen {
		return ReadRequest{}, ErrShortRDMAPHeader
	}
	return ReadRequest{
		SinkSTag: binary.BigEndian.Uint32(b[0:]),
		SinkTO:   binary.BigEndian.Uint64(b[4:]),
		Size:     binary.BigEndian.Uint32(b[12:]),
		SrcSTag:  binary.BigEndian.Uint32(b[16:]),
		SrcTO:    binary.BigEndian.Uint64(b[20:]),
	}, nil
}

// AppendReadRequest appends the 28-byte encoding of r to dst.
func AppendReadRequest(dst []byte, r *ReadRequest) []byte {
	dst = binary.BigEndian.AppendUint32(dst, r.SinkSTag)
	dst = binary.BigEndian.AppendUint64(dst, r.SinkTO)
	dst = binary.BigEndian.AppendUint32(dst, r.Size)
	dst = binary.BigEndian.AppendUint32(dst, r.SrcSTag)
	return binary.BigEndian.AppendUint64(dst, r.SrcTO)
}
