package mpa

// RequestFrame returns the header of the Request an Initiator with
// configuration cfg sends (RFC 5044 §7.1, RFC 6581 §5), and, when
// hdr.Enhanced(), the IRD/ORD block that leads its private data. cfg must
// have passed validation (Connect does it).
//
// The block carries cfg's IRD and ORD, raised to ORD 1 when a Read RTR is
// offered with ORD 0: the RTR needs one credit (docs/spec/mpa.md, Project
// decisions).
func RequestFrame(cfg *Config) (hdr Frame, blk IRDORD) {
	hdr.Rev = cfg.rev()
	if cfg.CRC {
		hdr.Flags |= FlagCRC
	}
	if cfg.Markers {
		hdr.Flags |= FlagMarkers
	}
	if !cfg.NoAdvertise {
		hdr.Flags |= Flags(cfg.Extensions.Normalize())
		if cfg.Extensions.Normalize() != 0 && !cfg.NoEchoProbe {
			hdr.Flags |= FlagEchoProbe
		}
	}
	if hdr.Rev != Rev2 {
		return hdr, blk
	}
	hdr.Flags |= FlagEnhanced
	blk.IRD, blk.ORD = cfg.IRD, cfg.ORD
	if cfg.P2P {
		blk.P2P = true
		blk.RTR = cfg.OfferRTR & RTRAll
		if blk.RTR&RTRRead != 0 && blk.ORD == 0 {
			blk.ORD = 1
		}
	}
	return hdr, blk
}

// appendFrameBlock appends a frame with header hdr whose private data is
// blk (when hdr.Enhanced()) followed by ulp.
func appendFrameBlock(dst []byte, hdr Frame, blk *IRDORD, ulp []byte) []byte {
	var pd []byte
	if hdr.Enhanced() {
		pd = AppendIRDORD(make([]byte, 0, IRDORDLen+len(ulp)), blk)
	}
	hdr.PrivateData = append(pd, ulp...)
	return AppendFrame(dst, &hdr)
}
