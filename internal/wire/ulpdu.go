package wire

// ULPDU is one decoded DDP segment (the ULPDU of one FPDU): its DDP header,
// the RDMAP header its opcode carries (a small tagged union: Header says
// which field is valid), and the payload. It is built for tools such as
// `iwarp decode`; every field prints with %v.
type ULPDU struct {
	DDP DDPHeader
	// Opcode is the opcode as the control field's own RV reads it (4 bits
	// under version 1, 5 bits under version 2).
	Opcode Opcode
	// Header says which of the header fields below is valid.
	Header HeaderKind

	ReadRequest    ReadRequest    // when Header == HeaderReadRequest
	ReadV2Request  ReadV2Request  // when Header == HeaderReadV2Request
	AtomicRequest  AtomicRequest  // when Header == HeaderAtomicRequest
	AtomicResponse AtomicResponse // when Header == HeaderAtomicResponse
	// Immediate is valid when Header == HeaderImmediate: the 8 bytes of an
	// Immediate Data message or of the last segment of a V2 Send with
	// Immediate.
	Immediate ImmediateData
	Terminate Terminate // when Header == HeaderTerminate

	// Payload is the bytes after the headers, a view into the parsed
	// slice; empty for messages that carry none.
	Payload []byte
}

// ParseULPDU decodes a whole ULPDU b (the bytes after MPA's ULPDU_Length,
// without pad and CRC). It needs the control field's RV to be 1 or 2, the
// opcode to be defined for it and the T bit to match the opcode, because
// those decide the layout; the other receiver checks (DDP version, the
// negotiated version, QN) are ValidateDDPHeader's. The ULPDU must have
// exactly the length its opcode allows.
//
// On an error it returns what it decoded so far (at least DDP once the DDP
// header is complete), so a tool can print it. It never allocates.
func ParseULPDU(b []byte) (ULPDU, error) {
	var u ULPDU
	h, n, err := ParseDDPHeader(b)
	if err != nil {
		return u, err
	}
	u.DDP = h
	rv := h.Control.Version()
	if rv != RDMAPVersion1 && rv != RDMAPVersion2 {
		return u, ErrInvalidRDMAPVersion
	}
	u.Opcode = h.Control.Opcode()
	info, ok := LookupOpcode(rv, u.Opcode)
	if !ok {
		return u, ErrUnexpectedOpcode
	}
	if info.Tagged != h.Tagged {
		return u, ErrOpcodeModel
	}
	rest := b[n:]
	if info.ImmediateLast && h.Last {
		u.Header = HeaderImmediate
		u.Immediate, err = ParseImmediateData(rest)
		return u, err
	}
	u.Header = info.Header
	switch info.Header {
	case HeaderNone:
		u.Payload = rest
		return u, nil
	case HeaderTerminate:
		u.Terminate, err = ParseTerminate(rest)
		return u, err
	case HeaderImmediate:
		u.Immediate, err = ParseImmediateData(rest)
		return u, err
	}
	if len(rest) < info.HeaderLen {
		return u, ErrShortRDMAPHeader
	}
	switch info.Header {
	case HeaderReadRequest:
		u.ReadRequest, err = ParseReadRequest(rest)
	case HeaderReadV2Request:
		u.ReadV2Request, err = ParseReadV2Request(rest)
	case HeaderAtomicRequest:
		u.AtomicRequest, err = ParseAtomicRequest(rest)
	case HeaderAtomicResponse:
		u.AtomicResponse, err = ParseAtomicResponse(rest)
	}
	if err == nil && len(rest) > info.HeaderLen {
		err = ErrRDMAPPayload
	}
	return u, err
}

// AppendULPDU appends u's encoding to dst: the DDP header, the RDMAP header
// u.Header names, then u.Payload. It does not check that the parts agree
// with each other; it re-encodes what ParseULPDU decoded.
func AppendULPDU(dst []byte, u *ULPDU) []byte {
	dst = AppendDDPHeader(dst, &u.DDP)
	switch u.Header {
	case HeaderReadRequest:
		dst = AppendReadRequest(dst, &u.ReadRequest)
	case HeaderReadV2Request:
		dst = AppendReadV2Request(dst, &u.ReadV2Request)
	case HeaderAtomicRequest:
		dst = AppendAtomicRequest(dst, &u.AtomicRequest)
	case HeaderAtomicResponse:
		dst = AppendAtomicResponse(dst, &u.AtomicResponse)
	case HeaderImmediate:
		dst = AppendImmediateData(dst, u.Immediate)
	case HeaderTerminate:
		dst = AppendTerminate(dst, &u.Terminate)
	}
	return append(dst, u.Payload...)
}
