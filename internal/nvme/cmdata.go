package nvme

import "encoding/binary"

// Sizes of the RDMA_CM private data of the NVMe RDMA transport binding
// (NVMe over Fabrics RDMA Transport 1.0 §3.3, Figures 3-5; NVMe-oF 1.1
// §7.3.3).
const (
	CMRequestLen = 32 // RDMA_CM_REQUEST private data
	CMReplyLen   = 32 // RDMA_CM_ACCEPT (reply) private data
	CMRejectLen  = 4  // RDMA_CM_REJECT private data
	CMRECFMT     = 0  // the record format these layouts are
)

// CMRequest is the private data of the host's connection request for one
// queue.
type CMRequest struct {
	RECFMT  uint16 // record format, CMRECFMT
	QID     uint16 // the queue: 0 the admin queue
	HRQSIZE uint16 // host receive queue size: responses the host can take at once (1's based)
	HSQSIZE uint16 // host send queue size, 0's based (the Connect's SQSIZE)
	CNTLID  uint16 // I/O queues: the controller's ID (bytes 9:8; reserved in RDMA Transport 1.0, Linux 6.1 sends 0)
}

// DecodeCMRequest reads a host's request private data. It needs the
// first CMRequestLen octets (more may follow: the private data of an
// iWARP connection request can be longer) and fails with a CMStatus:
// CMInvalidLength for short data, CMInvalidRECFMT for an unknown record
// format. A target rejects the connection with that status. It does not
// judge the queue sizes or QID, which depend on the target.
func DecodeCMRequest(b []byte) (CMRequest, error) {
	if len(b) < CMRequestLen {
		return CMRequest{}, CMInvalidLength
	}
	le := binary.LittleEndian
	r := CMRequest{
		RECFMT:  le.Uint16(b[0:]),
		QID:     le.Uint16(b[2:]),
		HRQSIZE: le.Uint16(b[4:]),
		HSQSIZE: le.Uint16(b[6:]),
		CNTLID:  le.Uint16(b[8:]),
	}
	if r.RECFMT != CMRECFMT {
		return r, CMInvalidRECFMT
	}
	return r, nil
}

// Encode writes r into the first CMRequestLen octets of b, reserved
// octets zero.
func (r *CMRequest) Encode(b []byte) error {
	if err := checkLen(b, CMRequestLen, "RDMA_CM request private data"); err != nil {
		return err
	}
	clear(b[:CMRequestLen])
	le := binary.LittleEndian
	le.PutUint16(b[0:], r.RECFMT)
	le.PutUint16(b[2:], r.QID)
	le.PutUint16(b[4:], r.HRQSIZE)
	le.PutUint16(b[6:], r.HSQSIZE)
	le.PutUint16(b[8:], r.CNTLID)
	return nil
}

// CMReply is the private data of the target's acceptance.
type CMReply struct {
	RECFMT  uint16 // record format, CMRECFMT
	CRQSIZE uint16 // controller receive queue size: commands it can take at once
}

// DecodeCMReply reads a target's reply private data (at least
// CMReplyLen octets). An unknown record format is CMInvalidRECFMT.
func DecodeCMReply(b []byte) (CMReply, error) {
	if len(b) < CMReplyLen {
		return CMReply{}, &LengthError{What: "RDMA_CM reply private data", Need: CMReplyLen, Got: len(b)}
	}
	r := CMReply{RECFMT: binary.LittleEndian.Uint16(b[0:]), CRQSIZE: binary.LittleEndian.Uint16(b[2:])}
	if r.RECFMT != CMRECFMT {
		return r, CMInvalidRECFMT
	}
	return r, nil
}

// Encode writes r into the first CMReplyLen octets of b, reserved octets
// zero.
func (r *CMReply) Encode(b []byte) error {
	if err := checkLen(b, CMReplyLen, "RDMA_CM reply private data"); err != nil {
		return err
	}
	clear(b[:CMReplyLen])
	binary.LittleEndian.PutUint16(b[0:], r.RECFMT)
	binary.LittleEndian.PutUint16(b[2:], r.CRQSIZE)
	return nil
}

// CMReject is the private data of the target's rejection.
type CMReject struct {
	RECFMT uint16   // record format, CMRECFMT
	STS    CMStatus // why
}

// DecodeCMReject reads a rejection's private data (at least CMRejectLen
// octets).
func DecodeCMReject(b []byte) (CMReject, error) {
	if len(b) < CMRejectLen {
		return CMReject{}, &LengthError{What: "RDMA_CM reject private data", Need: CMRejectLen, Got: len(b)}
	}
	return CMReject{RECFMT: binary.LittleEndian.Uint16(b[0:]), STS: CMStatus(binary.LittleEndian.Uint16(b[2:]))}, nil
}

// Encode writes r into the first CMRejectLen octets of b.
func (r *CMReject) Encode(b []byte) error {
	if err := checkLen(b, CMRejectLen, "RDMA_CM reject private data"); err != nil {
		return err
	}
	binary.LittleEndian.PutUint16(b[0:], r.RECFMT)
	binary.LittleEndian.PutUint16(b[2:], uint16(r.STS))
	return nil
}

// CMStatus is the status of an RDMA_CM rejection (NVMe over Fabrics RDMA
// Transport 1.0 Figure 5). It is an error, so that DecodeCMRequest can
// return the status to reject with.
type CMStatus uint16

// RDMA_CM rejection statuses.
const (
	CMInvalidLength  CMStatus = 0x01 // invalid private data length
	CMInvalidRECFMT  CMStatus = 0x02 // invalid RECFMT
	CMInvalidQID     CMStatus = 0x03 // invalid QID
	CMInvalidHSQSIZE CMStatus = 0x04 // invalid HSQSIZE
	CMInvalidHRQSIZE CMStatus = 0x05 // invalid HRQSIZE
	CMNoResources    CMStatus = 0x06 // no resources
	CMInvalidIRD     CMStatus = 0x07 // invalid IRD
	CMInvalidORD     CMStatus = 0x08 // invalid ORD
	CMInvalidCNTLID  CMStatus = 0x09 // invalid CNTLID (later than RDMA Transport 1.0)
)

var cmStatusNames = [...]string{
	CMInvalidLength: "invalid private data length", CMInvalidRECFMT: "invalid RECFMT",
	CMInvalidQID: "invalid QID", CMInvalidHSQSIZE: "invalid HSQSIZE",
	CMInvalidHRQSIZE: "invalid HRQSIZE", CMNoResources: "no resources",
	CMInvalidIRD: "invalid IRD", CMInvalidORD: "invalid ORD", CMInvalidCNTLID: "invalid CNTLID",
}

// String names s.
func (s CMStatus) String() string {
	if int(s) < len(cmStatusNames) && cmStatusNames[s] != "" {
		return cmStatusNames[s]
	}
	return "status 0x" + hex2(uint8(s>>8)) + hex2(uint8(s))
}

// Error implements error.
func (s CMStatus) Error() string { return "nvme: RDMA_CM reject: " + s.String() }
