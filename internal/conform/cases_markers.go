package conform

import (
	"encoding/binary"
	"fmt"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// markerCRCCases are the marker cases that need CRCs: they check that the
// responder's CRC covers every marker inside an FPDU, the one just before
// the CRC field included, and ignores the bits of a marker a sender leaves
// zero. Their names contain "marker", so a harness knows to ask for
// markers.
func markerCRCCases() []*Case {
	return []*Case{
		{
			Name: "Framing/marker-before-CRC/accepted", Category: "framing",
			Spec:  "RFC 5044 §4.3, §4.4, docs/fpdu.md decision 2: a marker due where the CRC field would start comes before it and the CRC covers it; two such Writes (without and with PAD) are placed",
			Needs: NeedSendMarkers | NeedCRC | NeedRegion,
			Script: func(s *Session) error {
				m := s.main()
				// The script's FPDUs start the stream (no RTR): from offset
				// 0, a 506-octet ULPDU puts the CRC field at 512; from 520,
				// a 499-octet one (PAD 3) puts it at 1024.
				pos := 0
				for _, n := range []int{506, 499} {
					u := Tagged(s.RV, wire.OpWrite, true, m.STag, m.TO, pattern(n-wire.TaggedHdrLen))
					b, err := s.Frame(u)
					if err != nil {
						return err
					}
					if err := checkMarkerBeforeCRC(b, pos); err != nil {
						return err
					}
					if err := s.Raw(b); err != nil {
						return err
					}
					pos += len(b)
				}
				return nil
			},
			Want: accepted,
		},
		{
			Name: "Framing/marker-before-CRC-left-out-of-CRC/LLP-0-0x02", Category: "framing",
			Spec:  "RFC 5044 §4.4, §8: the CRC covers the marker just before the CRC field; a CRC computed without it does not match: Terminate LLP/MPA 0x02",
			Needs: NeedSendMarkers | NeedCRC | NeedRegion,
			Script: func(s *Session) error {
				m := s.main()
				b, err := s.Frame(Tagged(s.RV, wire.OpWrite, true, m.STag, m.TO, pattern(506-wire.TaggedHdrLen)))
				if err != nil {
					return err
				}
				if err := checkMarkerBeforeCRC(b, 0); err != nil {
					return err
				}
				crcAt := len(b) - fpdu.CRCLen
				binary.LittleEndian.PutUint32(b[crcAt:], fpdu.CRC32c(b[:crcAt-fpdu.MarkerLen]))
				return s.Raw(b)
			},
			Want: terminate(rdma.TermLLPCRC, AttachNone),
		},
		{
			Name: "Framing/marker-reserved-bits-set/accepted", Category: "framing",
			Spec:  "RFC 5044 §4.2: a marker's reserved octets and FPDUPTR's two low bits are ignored on receive (they count in the CRC): a Write whose leading marker has them set is placed",
			Needs: NeedSendMarkers | NeedCRC | NeedRegion,
			Script: func(s *Session) error {
				m := s.main()
				b, err := s.Frame(Tagged(s.RV, wire.OpWrite, true, m.STag, m.TO, pattern(32)))
				if err != nil {
					return err
				}
				// The stream's first FPDU leads with a marker, FPDUPTR 0.
				b[0], b[1], b[3] = 0x5a, 0xa5, b[3]|3
				crcAt := len(b) - fpdu.CRCLen
				binary.LittleEndian.PutUint32(b[crcAt:], fpdu.CRC32c(b[:crcAt]))
				return s.Raw(b)
			},
			Want: accepted,
		},
	}
}

// checkMarkerBeforeCRC checks that b, an FPDU framed with CRC from stream
// offset pos, has a marker just before its CRC field and a CRC that covers
// it, so that a case sends what it says.
func checkMarkerBeforeCRC(b []byte, pos int) error {
	at := len(b) - fpdu.CRCLen - fpdu.MarkerLen
	hdr := pos
	if pos%fpdu.MarkerInterval == 0 {
		hdr += fpdu.MarkerLen // after the leading marker
	}
	if at < 0 || (pos+at)%fpdu.MarkerInterval != 0 || int(binary.BigEndian.Uint16(b[at+2:])) != pos+at-hdr {
		return fmt.Errorf("the FPDU framed at stream offset %d has no marker before its CRC field", pos)
	}
	if binary.LittleEndian.Uint32(b[at+fpdu.MarkerLen:]) != fpdu.CRC32c(b[:at+fpdu.MarkerLen]) {
		return fmt.Errorf("the FPDU framed at stream offset %d has a CRC that leaves out the marker before it", pos)
	}
	return nil
}
