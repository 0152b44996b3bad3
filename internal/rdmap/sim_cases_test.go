package rdmap

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/internal/conform"
	"github.com/goiwarp/iwarp/rdma"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
)

// simCases are conform's cases (internal/conform/cases_*.go) that run on a
// stream in full operation, with the same segments and the same expected
// answers; where a case's answer depends on the victim's receives (a Send
// needs one), the session works out the answer from what the victim
// posted. The MPA startup cases have no place here (the Cores start in
// full operation).
var simCases = []*simCase{
	// Framing (cases_framing.go).
	{name: "Framing/wrong-CRC/LLP-0-0x02", needs: simNeedCRC, script: func(s *simSession) {
		b := s.frame(conform.Tagged(s.rv, wire.OpWrite, true, 0x77, 0, nil))
		b[len(b)-1] ^= 0x01
		s.raw(b)
		s.kind, s.codes, s.done = conform.WantTerminate, []rdma.TermCode{rdma.TermLLPCRC}, true
	}},
	{name: "Framing/ULPDU_Length-below-DDP-header/LLP-0-0x03", needs: simNeedNoMarkers, script: func(s *simSession) {
		s.raw(conform.RawFPDU(s.crc, []byte{0x41, 0x43, 0x01, 0x00}))
		s.kind, s.codes, s.done = conform.WantTerminate, []rdma.TermCode{rdma.TermLLPMarker}, true
	}},
	{name: "Framing/marker-FPDUPTR-mismatch/LLP-0-0x03", needs: simNeedMarkers, script: func(s *simSession) {
		// A Write into the main region long enough to hold a marker; the
		// first marker's FPDUPTR points 4 octets off.
		m := s.main()
		start := s.h.mon.offset()
		b := s.frame(conform.Tagged(s.rv, wire.OpWrite, true, m.stag, m.to, simPattern(700)))
		for p := range len(b) - 4 {
			if (start+uint64(p))%fpdu.MarkerInterval == 0 {
				binary.BigEndian.PutUint16(b[p+2:], binary.BigEndian.Uint16(b[p+2:])+4)
				break
			}
		}
		if s.crc {
			binary.LittleEndian.PutUint32(b[len(b)-4:], fpdu.CRC32c(b[:len(b)-4]))
		}
		s.raw(b)
		s.kind, s.codes, s.done = conform.WantTerminate, []rdma.TermCode{rdma.TermLLPMarker}, true
	}},
	{name: "Framing/marker-before-CRC/accepted", needs: simNeedMarkers | simNeedCRC, script: func(s *simSession) {
		// Two Writes whose CRC field falls where a marker is due: the
		// marker comes first and the CRC covers it (RFC 5044 §4.3, §4.4).
		for range 2 {
			s.send(s.markerBeforeCRC())
		}
		s.want(conform.WantAccept)
	}},
	{name: "Framing/marker-before-CRC-left-out-of-CRC/LLP-0-0x02", needs: simNeedMarkers | simNeedCRC, script: func(s *simSession) {
		b := s.frame(s.markerBeforeCRC())
		at := len(b) - fpdu.CRCLen
		binary.LittleEndian.PutUint32(b[at:], fpdu.CRC32c(b[:at-fpdu.MarkerLen]))
		s.raw(b)
		s.kind, s.codes, s.done = conform.WantTerminate, []rdma.TermCode{rdma.TermLLPCRC}, true
	}},
	{name: "Framing/marker-reserved-bits-set/accepted", needs: simNeedMarkers | simNeedCRC, script: func(s *simSession) {
		// A Write long enough to hold a marker, whose reserved octets and
		// FPDUPTR's low bits are set: ignored, counted in the CRC.
		m := s.main()
		start := s.h.mon.offset()
		b := s.frame(conform.Tagged(s.rv, wire.OpWrite, true, m.stag, m.to, simPattern(700)))
		for p := range len(b) - fpdu.CRCLen {
			if (start+uint64(p))%fpdu.MarkerInterval == 0 {
				b[p], b[p+1], b[p+3] = 0x5a, 0xa5, b[p+3]|3
				break
			}
		}
		binary.LittleEndian.PutUint32(b[len(b)-fpdu.CRCLen:], fpdu.CRC32c(b[:len(b)-fpdu.CRCLen]))
		s.raw(b)
		s.want(conform.WantAccept)
	}},
	{name: "Framing/ULPDU_Length-65535-then-FIN/torn-down", needs: simNeedNoMarkers, script: func(s *simSession) {
		b := binary.BigEndian.AppendUint16(nil, 0xFFFF)
		b = append(b, conform.Tagged(s.rv, wire.OpWrite, true, s.main().stag, s.main().to, simPattern(64)).Bytes...)
		s.raw(b)
		s.want(conform.WantTeardown)
	}},
	{name: "Framing/truncated-FPDU-then-FIN/torn-down", script: func(s *simSession) {
		u := s.sendMsg([]byte("truncated send"))
		if !s.recv(u, len("truncated send")) {
			return // sent whole: the victim refuses it at its header
		}
		b := s.frame(u)
		s.raw(b[:len(b)/2])
		s.want(conform.WantTeardown)
	}},

	// DDP (cases_ddp.go).
	{name: "DDP/tagged-DDP-version-0/DDP-1-0x04", script: func(s *simSession) {
		s.offend(conform.Tagged(s.rv, wire.OpWrite, true, 0x77, 0, nil).WithDDPVersion(0), rdma.TermDDPTaggedVersion, conform.AttachDDP)
	}},
	{name: "DDP/untagged-DDP-version-2/DDP-2-0x06", script: func(s *simSession) {
		s.offend(s.sendMsg([]byte("version")).WithDDPVersion(2), rdma.TermDDPUntaggedVersion, conform.AttachDDP)
	}},
	{name: "DDP/invalid-QN-5/DDP-2-0x01", script: func(s *simSession) {
		s.offend(conform.Untagged(s.rv, wire.OpSend, true, 5, 1, 0, []byte("qn")), rdma.TermDDPInvalidQN, conform.AttachDDP)
	}},
	{name: "DDP/Send-MSN-out-of-range/DDP-2-0x03", script: func(s *simSession) {
		s.offend(conform.Untagged(s.rv, wire.OpSend, true, wire.QNSend, s.msn[wire.QNSend]+1000, 0, []byte("far")), rdma.TermDDPMSNRange, conform.AttachDDP)
	}},
	{name: "DDP/Send-MSN-replayed/DDP-2-0x03", script: func(s *simSession) {
		msn := s.nextMSN(wire.QNSend)
		first := conform.Untagged(s.rv, wire.OpSend, true, wire.QNSend, msn, 0, []byte("first"))
		if s.recv(first, 5) {
			s.send(first)
		}
		s.offend(conform.Untagged(s.rv, wire.OpSend, true, wire.QNSend, msn, 0, []byte("again")), rdma.TermDDPMSNRange, conform.AttachDDP)
	}},
	{name: "DDP/Send-MO-gap/DDP-2-0x04", script: func(s *simSession) {
		msn := s.nextMSN(wire.QNSend)
		first := conform.Untagged(s.rv, wire.OpSend, false, wire.QNSend, msn, 0, []byte("abcd"))
		if s.recv(first, 4) {
			s.send(first)
		}
		s.offend(conform.Untagged(s.rv, wire.OpSend, true, wire.QNSend, msn, 100, []byte("efgh")), rdma.TermDDPInvalidMO, conform.AttachDDP)
	}},
	{name: "DDP/Send-MO-overlap/DDP-2-0x04", script: func(s *simSession) {
		msn := s.nextMSN(wire.QNSend)
		first := conform.Untagged(s.rv, wire.OpSend, false, wire.QNSend, msn, 0, []byte("abcdefgh"))
		if s.recv(first, 8) {
			s.send(first)
		}
		s.offend(conform.Untagged(s.rv, wire.OpSend, true, wire.QNSend, msn, 4, []byte("efgh")), rdma.TermDDPInvalidMO, conform.AttachDDP)
	}},
	{name: "DDP/Send-longer-than-buffer/DDP-2-0x05", script: func(s *simSession) {
		n := max(s.recvCap(), 0) + 1
		s.recv(s.sendMsg(make([]byte, n)), n) // no receive, or one too short
	}},
	{name: "DDP/Sends-beyond-posted-receives/DDP-2-0x02", script: func(s *simSession) {
		for !s.done {
			u := s.sendMsg(nil)
			if s.recv(u, 0) {
				s.send(u)
			}
		}
	}},
	{name: "DDP/untagged-messages-interleaved/DDP-2-0x03", script: func(s *simSession) {
		first, second := s.nextMSN(wire.QNSend), s.nextMSN(wire.QNSend)
		u := conform.Untagged(s.rv, wire.OpSend, false, wire.QNSend, first, 0, []byte("one-a"))
		if s.recv(u, 5) {
			s.send(u)
		}
		s.offend(conform.Untagged(s.rv, wire.OpSend, true, wire.QNSend, second, 0, []byte("two")), rdma.TermDDPMSNRange, conform.AttachDDP)
	}},
	{name: "DDP/tagged-Write-inside-untagged-Send/accepted", script: func(s *simSession) {
		msn := s.nextMSN(wire.QNSend)
		m := s.main()
		head := conform.Untagged(s.rv, wire.OpSend, false, wire.QNSend, msn, 0, []byte("head"))
		capacity := s.recvCap()
		if !s.recv(head, 4) {
			return
		}
		s.send(head)
		s.send(conform.Tagged(s.rv, wire.OpWrite, true, m.stag, m.to, []byte("inside")))
		tail := conform.Untagged(s.rv, wire.OpSend, true, wire.QNSend, msn, 4, []byte("tail"))
		if capacity < 8 {
			s.offend(tail, rdma.TermDDPTooLong, conform.AttachDDP) // the receive holds the head only
			return
		}
		s.send(tail)
		s.want(conform.WantAccept)
	}},

	// Tagged placement (cases_tagged.go).
	simWriteCase("Tagged/Write-unregistered-STag/DDP-1-0x00", func(s *simSession) (uint32, uint64) { return s.unknownSTag(), s.main().to }, 16, rdma.TermDDPInvalidSTag),
	simWriteCase("Tagged/Write-other-PD-STag/DDP-1-0x02", func(s *simSession) (uint32, uint64) { r := s.slot(simSlotOtherPD); return r.stag, r.to }, 16, rdma.TermDDPSTagNotAssoc),
	simWriteCase("Tagged/Write-without-write-access/DDP-1-0x00", func(s *simSession) (uint32, uint64) { r := s.slot(simSlotReadOnly); return r.stag, r.to }, 16, rdma.TermDDPInvalidSTag),
	simWriteCase("Tagged/Write-past-end/DDP-1-0x01", func(s *simSession) (uint32, uint64) { m := s.main(); return m.stag, m.to + uint64(m.n) - 8 }, 16, rdma.TermDDPBaseBounds),
	simWriteCase("Tagged/Write-TO-wrap/DDP-1-0x03", func(s *simSession) (uint32, uint64) { return s.main().stag, ^uint64(0) - 3 }, 16, rdma.TermDDPTOWrap),
	simWriteCase("Tagged/Write-invalidated-STag/DDP-1-0x00", func(s *simSession) (uint32, uint64) { r := s.slot(simSlotInvalidated); return r.stag, r.to }, 16, rdma.TermDDPInvalidSTag),
	simWriteCase("Tagged/Write-re-keyed-old-STag/DDP-1-0x00", func(s *simSession) (uint32, uint64) { r := s.slot(simSlotRekeyed); return r.stag, r.to }, 16, rdma.TermDDPInvalidSTag),
	{name: "Tagged/zero-length-Write-unknown-STag/accepted", script: func(s *simSession) {
		s.send(conform.Tagged(s.rv, wire.OpWrite, true, 0x00ABCD01, 0x1234, nil))
		s.want(conform.WantAccept)
	}},
	{name: "Tagged/Write-within-bounds/accepted", script: func(s *simSession) {
		s.send(conform.Tagged(s.rv, wire.OpWrite, true, s.main().stag, s.main().to, simPattern(64)))
		s.want(conform.WantAccept)
	}},

	// Read Requests (cases_read.go).
	simReadCase("Read/unregistered-source-STag/RDMAP-1-0x00", func(s *simSession) wire.ReadRequest { return simSrc(s.unknownSTag(), s.main().to, 16) }, rdma.TermRDMAPInvalidSTag),
	simReadCase("Read/without-read-access/RDMAP-1-0x02", func(s *simSession) wire.ReadRequest { r := s.slot(simSlotWriteOnly); return simSrc(r.stag, r.to, 16) }, rdma.TermRDMAPAccessRights),
	simReadCase("Read/past-end/RDMAP-1-0x01", func(s *simSession) wire.ReadRequest { m := s.main(); return simSrc(m.stag, m.to+uint64(m.n)-8, 16) }, rdma.TermRDMAPBaseBounds),
	simReadCase("Read/4GiB-request/RDMAP-1-0x01", func(s *simSession) wire.ReadRequest { m := s.main(); return simSrc(m.stag, m.to, 0xFFFFFFFF) }, rdma.TermRDMAPBaseBounds),
	simReadCase("Read/other-PD-STag/RDMAP-1-0x03", func(s *simSession) wire.ReadRequest { r := s.slot(simSlotOtherPD); return simSrc(r.stag, r.to, 16) }, rdma.TermRDMAPSTagNotAssoc),
	simReadCase("Read/TO-wrap/RDMAP-1-0x04", func(s *simSession) wire.ReadRequest { return simSrc(s.main().stag, ^uint64(0)-3, 16) }, rdma.TermRDMAPTOWrap),
	{name: "Read/MSN-out-of-range/DDP-2-0x03", script: func(s *simSession) {
		m := s.main()
		s.offend(conform.ReadRequest(s.rv, s.msn[wire.QNReadReq]+500, simSrc(m.stag, m.to, 16)), rdma.TermDDPMSNRange, conform.AttachRDMA)
	}},
	{name: simIRDCase, needs: simNeedFast, script: func(s *simSession) {
		// IRD+1 Reads of the whole main region (1 MiB here) in one burst,
		// their Responses not read for a while.
		m := s.main()
		ird := s.w.cfg.ird[s.v.idx]
		for i := 0; i < ird; i++ {
			s.send(conform.ReadRequest(s.rv, s.nextMSN(wire.QNReadReq), simSrc(m.stag, m.to, m.n)))
		}
		s.offend(conform.ReadRequest(s.rv, s.nextMSN(wire.QNReadReq), simSrc(m.stag, m.to, m.n)), rdma.TermRDMAPStreamCatastroph, conform.AttachRDMA)
		s.stopReadingFor = s.w.cfg.opTimeout / 2
	}},
	{name: "Read/zero-length-unknown-STags/accepted", script: func(s *simSession) {
		s.send(conform.ReadRequest(s.rv, s.nextMSN(wire.QNReadReq), simSrc(0x00ABCD02, 0x99, 0)))
		s.want(conform.WantAccept)
	}},
	{name: "Read/within-bounds/accepted", script: func(s *simSession) {
		s.send(conform.ReadRequest(s.rv, s.nextMSN(wire.QNReadReq), simSrc(s.main().stag, s.main().to, 64)))
		s.want(conform.WantAccept)
	}},

	// RDMAP (cases_rdmap.go).
	{name: "RDMAP/RDMAP-version-0/RDMAP-2-0x05", script: func(s *simSession) {
		s.offend(conform.Untagged(0, wire.OpSend, true, wire.QNSend, s.nextMSN(wire.QNSend), 0, []byte("rv0")), rdma.TermRDMAPInvalidVersion, conform.AttachDDP)
	}},
	{name: "RDMAP/undefined-opcode-0xC/RDMAP-2-0x06", script: func(s *simSession) {
		s.offend(conform.Untagged(s.rv, 0xC, true, wire.QNSend, s.nextMSN(wire.QNSend), 0, []byte("op")), rdma.TermRDMAPUnexpectedOpcode, conform.AttachDDP)
	}},
	{name: "RDMAP/Read-Response-unsolicited/RDMAP-2-0x06", needs: simNeedNoORD, script: func(s *simSession) {
		s.offend(conform.Tagged(s.rv, wire.OpReadResponse, true, 0x00ABCD03, 0, simPattern(8)), rdma.TermRDMAPUnexpectedOpcode, conform.AttachDDP)
	}},
	{name: "RDMAP/Send-with-Invalidate-unknown-STag/RDMAP-2-0x09", script: func(s *simSession) {
		u := conform.Untagged(s.rv, wire.OpSendInv, true, wire.QNSend, s.nextMSN(wire.QNSend), 0, []byte("inv"))
		simPutInvSTag(u.Bytes, s.unknownSTag())
		if s.recv(u, 3) {
			s.offend(u, rdma.TermRDMAPOpInvalidate, conform.AttachDDP)
		}
	}},
	{name: "RDMAP/garbage-Terminate-from-peer/closed", script: func(s *simSession) {
		s.send(conform.Untagged(s.rv, wire.OpTerminate, true, wire.QNTerminate, s.nextMSN(wire.QNTerminate), 0, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0x02, 0x03}))
		s.want(conform.WantClosed)
	}},
	{name: "RDMAP/Terminate-in-siw-layout-from-peer/closed", script: func(s *simSession) {
		s.send(conform.Untagged(s.rv, wire.OpTerminate, true, wire.QNTerminate, s.nextMSN(wire.QNTerminate), 0, []byte{0x21, 0x01, 0x00, 0x00}))
		s.want(conform.WantClosed)
	}},

	// RFC 7306 (cases_ext.go): the victim executes atomics whatever was
	// agreed (extensions.md §3.4).
	simAtomicCase("Atomic/misaligned-TO/RDMAP-2-0x07", func(s *simSession) wire.AtomicRequest { return conform.FetchAdd(1, s.main().stag, s.main().to+4, 1) }, rdma.TermRDMAPStreamCatastroph),
	simAtomicCase("Atomic/past-end/RDMAP-1-0x01", func(s *simSession) wire.AtomicRequest {
		return conform.FetchAdd(2, s.main().stag, s.main().to+uint64(s.main().n), 1)
	}, rdma.TermRDMAPBaseBounds),
	simAtomicCase("Atomic/unregistered-STag/RDMAP-1-0x00", func(s *simSession) wire.AtomicRequest { return conform.FetchAdd(3, s.unknownSTag(), s.main().to, 1) }, rdma.TermRDMAPInvalidSTag),
	simAtomicCase("Atomic/without-atomic-access/RDMAP-1-0x02", func(s *simSession) wire.AtomicRequest {
		r := s.slot(simSlotReadOnly)
		return conform.FetchAdd(4, r.stag, r.to, 1)
	}, rdma.TermRDMAPAccessRights),
	simAtomicCase("Atomic/unknown-AOpCode/RDMAP-2-0x06", func(s *simSession) wire.AtomicRequest {
		r := conform.FetchAdd(5, s.main().stag, s.main().to, 1)
		r.AOpCode = 0x7
		return r
	}, rdma.TermRDMAPUnexpectedOpcode),
	{name: "Atomic/Atomic-Response-unsolicited/RDMAP-2-0x06", needs: simNeedNoORD, script: func(s *simSession) {
		s.offend(conform.Untagged(s.rv, wire.OpAtomicResponse, true, wire.QNResponse, s.nextMSN(wire.QNResponse), 0, make([]byte, 12)), rdma.TermRDMAPUnexpectedOpcode, conform.AttachDDP)
	}},
	{name: "Atomic/Immediate-Data-7-octets/RDMAP-2-0xFF", script: func(s *simSession) {
		s.offend(conform.Untagged(s.rv, wire.OpImmediate, true, wire.QNSend, s.nextMSN(wire.QNSend), 0, make([]byte, 7)), rdma.TermRDMAPOpUnspecified, conform.AttachDDP)
	}},
	{name: "Atomic/FetchAdd-not-negotiated/accepted", needs: simNeedNoRFC7306, script: func(s *simSession) {
		s.send(conform.AtomicRequest(s.rv, s.nextMSN(wire.QNReadReq), conform.FetchAdd(6, s.main().stag, s.main().to, 1)))
		s.want(conform.WantAccept)
	}},

	// V2 (cases_ext.go).
	{name: "V2/RDMAP-version-2-not-negotiated/RDMAP-2-0x05", needs: simNeedNoV2, script: func(s *simSession) {
		s.offend(conform.Untagged(wire.RDMAPVersion2, wire.OpSendImm, true, wire.QNSend, s.nextMSN(wire.QNSend), 0, make([]byte, 8)), rdma.TermRDMAPInvalidVersion, conform.AttachDDP)
	}},
	{name: "V2/RDMAP-version-1-after-V2/RDMAP-2-0x05", needs: simNeedV2, script: func(s *simSession) {
		s.offend(conform.Untagged(wire.RDMAPVersion1, wire.OpSend, true, wire.QNSend, s.nextMSN(wire.QNSend), 0, []byte("v1")), rdma.TermRDMAPInvalidVersion, conform.AttachDDP)
	}},
	{name: "V2/undefined-opcode-0x17/RDMAP-2-0x06", needs: simNeedV2, script: func(s *simSession) {
		s.offend(conform.Untagged(wire.RDMAPVersion2, 0x17, true, wire.QNSend, s.nextMSN(wire.QNSend), 0, []byte("x")), rdma.TermRDMAPUnexpectedOpcode, conform.AttachDDP)
	}},
	{name: "V2/Read-V2-Response-unsolicited/RDMAP-2-0x06", needs: simNeedV2 | simNeedNoORD, script: func(s *simSession) {
		s.offend(conform.Untagged(wire.RDMAPVersion2, wire.OpReadV2Response, true, wire.QNResponse, s.nextMSN(wire.QNResponse), 0, simPattern(4)), rdma.TermRDMAPUnexpectedOpcode, conform.AttachDDP)
	}},
	{name: "V2/Send-with-Immediate-7-octets/RDMAP-2-0xFF", needs: simNeedV2, script: func(s *simSession) {
		s.offend(conform.Untagged(wire.RDMAPVersion2, wire.OpSendImm, true, wire.QNSend, s.nextMSN(wire.QNSend), 0, make([]byte, 7)), rdma.TermRDMAPOpUnspecified, conform.AttachDDP)
	}},

	// Single-segment messages and continuing segments (cases_segment.go).
	simSingleCase("Segment/Read-Request-L0/DDP-2-0x05", 0, wire.OpReadRequest, false, 0, simReadReqBody),
	simSingleCase("Segment/Read-Request-MO-8/DDP-2-0x04", 0, wire.OpReadRequest, true, 8, simReadReqBody),
	simSingleCase("Segment/Read-V2-Request-L0/DDP-2-0x05", simNeedV2, wire.OpReadV2Request, false, 0, simReadV2ReqBody),
	simSingleCase("Segment/Read-V2-Request-MO-8/DDP-2-0x04", simNeedV2, wire.OpReadV2Request, true, 8, simReadV2ReqBody),
	simSingleCase("Segment/Atomic-Request-L0/DDP-2-0x05", 0, wire.OpAtomicRequest, false, 0, simAtomicReqBody),
	simSingleCase("Segment/Atomic-Request-MO-8/DDP-2-0x04", 0, wire.OpAtomicRequest, true, 8, simAtomicReqBody),
	simSingleCase("Segment/Immediate-Data-L0/DDP-2-0x05", 0, wire.OpImmediate, false, 0, func(*simSession) []byte { return make([]byte, wire.ImmediateDataLen) }),
	simSingleCase("Segment/Immediate-Data-MO-8/DDP-2-0x04", 0, wire.OpImmediate, true, 8, func(*simSession) []byte { return make([]byte, wire.ImmediateDataLen) }),
	simContinuedCase("Segment/Send-with-Immediate-ended-by-Send/RDMAP-2-0x06", simNeedV2, wire.OpSendImm, wire.OpSend, simPattern(4)),
	simContinuedCase("Segment/Send-ended-by-Send-with-Immediate/RDMAP-2-0x06", simNeedV2, wire.OpSend, wire.OpSendImm, make([]byte, wire.ImmediateDataLen)),
	simContinuedCase("Segment/Send-ended-by-Send-with-SE/RDMAP-2-0x06", 0, wire.OpSend, wire.OpSendSE, simPattern(4)),
}

// markerBeforeCRC returns a Write into the main region whose FPDU, framed
// where the stream is, has a marker just before its CRC field.
func (s *simSession) markerBeforeCRC() conform.ULPDU {
	m := s.main()
	for n := wire.TaggedHdrLen; ; n++ {
		u := conform.Tagged(s.rv, wire.OpWrite, true, m.stag, m.to, simPattern(n-wire.TaggedHdrLen))
		e := fpdu.NewEncoder(s.w.cfg.framing(s.h.idx), s.offset())
		if err := e.AppendCopy(u.Bytes); err != nil {
			panic(err)
		}
		size := e.Buffered()
		if (s.offset()+uint64(size-fpdu.CRCLen-fpdu.MarkerLen))%fpdu.MarkerInterval == 0 {
			return u
		}
	}
}

const simIRDCase = "Read/IRD-exceeded/RDMAP-2-0x07"

func simWriteCase(name string, at func(*simSession) (uint32, uint64), n int, code rdma.TermCode) *simCase {
	return &simCase{name: name, script: func(s *simSession) {
		stag, to := at(s)
		s.offend(conform.Tagged(s.rv, wire.OpWrite, true, stag, to, simPattern(n)), code, conform.AttachDDP)
	}}
}

func simSrc(stag uint32, to uint64, n uint32) wire.ReadRequest {
	return wire.ReadRequest{SinkSTag: 0x00DA7A01, SinkTO: 0, Size: n, SrcSTag: stag, SrcTO: to}
}

func simReadCase(name string, req func(*simSession) wire.ReadRequest, code rdma.TermCode) *simCase {
	return &simCase{name: name, script: func(s *simSession) {
		s.offend(conform.ReadRequest(s.rv, s.nextMSN(wire.QNReadReq), req(s)), code, conform.AttachRDMA)
	}}
}

func simAtomicCase(name string, req func(*simSession) wire.AtomicRequest, code rdma.TermCode) *simCase {
	return &simCase{name: name, script: func(s *simSession) {
		s.offend(conform.AtomicRequest(s.rv, s.nextMSN(wire.QNReadReq), req(s)), code, conform.AttachDDP)
	}}
}

func simReadReqBody(s *simSession) []byte {
	return wire.AppendReadRequest(nil, &wire.ReadRequest{SinkSTag: 0x00DA7A01, Size: 16, SrcSTag: s.main().stag, SrcTO: s.main().to})
}

func simReadV2ReqBody(s *simSession) []byte {
	return wire.AppendReadV2Request(nil, &wire.ReadV2Request{Size: 16, SrcSTag: s.main().stag, SrcTO: s.main().to})
}

func simAtomicReqBody(s *simSession) []byte {
	r := conform.FetchAdd(7, s.main().stag, s.main().to, 1)
	return wire.AppendAtomicRequest(nil, &r)
}

// simSingleCase sends a single-segment message with L=0 (DDP/2/0x05) or
// at MO≠0 (DDP/2/0x04).
func simSingleCase(name string, needs simNeed, op wire.Opcode, last bool, mo uint32, body func(*simSession) []byte) *simCase {
	code := rdma.TermDDPInvalidMO
	if mo == 0 {
		code = rdma.TermDDPTooLong
	}
	qn := uint32(wire.QNReadReq)
	if op == wire.OpImmediate {
		qn = wire.QNSend
	}
	return &simCase{name: name, needs: needs, script: func(s *simSession) {
		s.offend(conform.Untagged(s.rv, op, last, qn, s.nextMSN(qn), mo, body(s)), code, conform.AttachDDP)
	}}
}

// simContinuedCase sends a Send-type message's first segment with opcode
// first and its last one with opcode last (RDMAP/2/0x06).
func simContinuedCase(name string, needs simNeed, first, last wire.Opcode, lastPayload []byte) *simCase {
	return &simCase{name: name, needs: needs, script: func(s *simSession) {
		msn := s.nextMSN(wire.QNSend)
		u := conform.Untagged(s.rv, first, false, wire.QNSend, msn, 0, simPattern(4))
		if s.recv(u, 4) {
			s.send(u)
		}
		s.offend(conform.Untagged(s.rv, last, true, wire.QNSend, msn, 4, lastPayload), rdma.TermRDMAPUnexpectedOpcode, conform.AttachDDP)
	}}
}
