package wire

import "encoding/binary"

// ReadV2RequestLen is the length of the RDMA Read V2 Request header that
// follows the untagged DDP header (draft-wood-storm-rdmap-ext-v2 §4).
const ReadV2RequestLen = 16

// ReadV2Request is the V2 draft's RDMA Read V2 Request header. Unlike the
// RFC 5040 Read Request it names no Data Sink: the response is untagged and
// lands in the buffers the requester posted with the read.
type ReadV2Request struct {
	Size    uint32 // RDMA Read Message Size (RDMARDSZ)
	SrcSTag uint32 // Data Source STag
	SrcTO   uint64 // Data Source Tagged Offset
}

// ParseReadV2Request decodes the Read V2 Request header at the start of b.
// Bytes after the 16 header bytes are not looked at.
func ParseReadV2Request(b []byte) (ReadV2Request, error) {
	if len(b) < ReadV2RequestLen {
		return ReadV2Request{}, ErrShortRDMAPHeader
	}
	return ReadV2Request{
		Size:    binary.BigEndian.Uint32(b[0:]),
		SrcSTag: binary.BigEndian.Uint32(b[4:]),
		SrcTO:   binary.BigEndian.Uint64(b[8:]),
	}, nil
}

// AppendReadV2Request appends the 16-byte encoding of r to dst.
func AppendReadV2Request(dst []byte, r *ReadV2Request) []byte {
	dst = binary.BigEndian.AppendUint32(dst, r.Size)
	dst = binary.BigEndian.AppendUint32(dst, r.SrcSTag)
	return binary.BigEndian.AppendUint64(dst, r.SrcTO)
}
