package fpdu

// Options are the negotiated framing parameters of one MPA connection
// (RFC 5044 §7.1: the M and C bits of the MPA Request and Reply).
type Options struct {
	// CRC: generate and check the CRC32c (C was negotiated). Otherwise the
	// trailer is sent as 4 zero octets and never checked (RFC 5044 §7.1.2).
	CRC bool
	// SendMarkers: insert markers into what we send (the peer set M).
	SendMarkers bool
	// RecvMarkers: strip and check markers in what we receive (we set M).
	RecvMarkers bool
	// MaxULPDU bounds the received ULPDU_Length; 0 (or anything above
	// 65535) means 65535. A larger received length is ErrULPDUTooLong.
	MaxULPDU int
	// HoldSendUntilReceive is the MPA Responder rule (RFC 5044 §7.1.2): send
	// no FPDU before the first FPDU from the Initiator has arrived. Flush
	// blocks until the Reader has read the first FPDU's header (or the Conn
	// is closed).
	HoldSendUntilReceive bool
}

// maxULPDU returns the effective receive bound of o.
func (o Options) maxULPDU() int {
	if o.MaxULPDU <= 0 || o.MaxULPDU > MaxULPDULen {
		return MaxULPDULen
	}
	return o.MaxULPDU
}
