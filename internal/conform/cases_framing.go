package conform

import (
	"encoding/binary"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// framingCases break MPA full operation (RFC 5044 §4-§6).
func framingCases() []*Case {
	return append(basicFramingCases(), markerCRCCases()...)
}

// basicFramingCases: CRC, ULPDU_Length, marker and truncation errors.
func basicFramingCases() []*Case {
	return []*Case{
		{
			Name: "Framing/wrong-CRC/LLP-0-0x02", Category: "framing",
			Spec:  "RFC 5044 §8: an FPDU whose CRC does not match is a Terminate LLP/MPA 0x02, with no header attached",
			Needs: NeedCRC,
			Script: func(s *Session) error {
				b, err := s.Frame(Tagged(s.RV, wire.OpWrite, true, 0x77, 0, nil))
				if err != nil {
					return err
				}
				b[len(b)-1] ^= 0x01
				return s.Raw(b)
			},
			Want: terminate(rdma.TermLLPCRC, AttachNone),
		},
		{
			Name: "Framing/ULPDU_Length-below-DDP-header/LLP-0-0x03", Category: "framing",
			Spec: "RFC 5044 §4.1, docs/fpdu.md: a ULPDU_Length that cannot hold a DDP header breaks the framing: Terminate LLP/MPA 0x03",
			Script: func(s *Session) error {
				if s.Params.SendMarkers {
					return nil
				}
				return s.Raw(RawFPDU(s.Params.CRC, []byte{0x41, 0x43, 0x01, 0x00}))
			},
			Want: terminate(rdma.TermLLPMarker, AttachNone),
		},
		{
			Name: "Framing/marker-FPDUPTR-mismatch/LLP-0-0x03", Category: "framing",
			Spec:  "RFC 5044 §8: a marker whose FPDUPTR does not point at the FPDU start is Terminate LLP/MPA 0x03",
			Needs: NeedSendMarkers,
			Script: func(s *Session) error {
				b, err := s.Frame(Tagged(s.RV, wire.OpWrite, true, 0x77, 0, nil))
				if err != nil {
					return err
				}
				// The first FPDU carries the stream's first marker, leading
				// with FPDUPTR 0; make it point 4 octets back.
				b[3] = 4
				if s.Params.CRC { // the CRC covers the leading marker
					binary.LittleEndian.PutUint32(b[len(b)-4:], fpdu.CRC32c(b[:len(b)-4]))
				}
				return s.Raw(b)
			},
			Want: terminate(rdma.TermLLPMarker, AttachNone),
		},
		{
			Name: "Framing/ULPDU_Length-65535-then-FIN/torn-down", Category: "framing",
			Spec:  "RFC 5044 §6: a stream that ends inside an FPDU (here a Write into the main region announcing 65535 octets and carrying 64) is a lost connection; the receiver tears down (a Terminate LLP 0x01 is allowed, none is required) and reports no Write",
			Needs: NeedRegion,
			Script: func(s *Session) error {
				b := binary.BigEndian.AppendUint16(nil, 0xFFFF)
				b = append(b, Tagged(s.RV, wire.OpWrite, true, s.main().STag, s.main().TO, pattern(64)).Bytes...)
				if err := s.Raw(b); err != nil {
					return err
				}
				return s.CloseWrite()
			},
			Want: torn,
		},
		{
			Name: "Framing/truncated-FPDU-then-FIN/torn-down", Category: "framing",
			Spec: "RFC 5044 §6: a stream that ends inside an FPDU is a lost connection; the receiver tears down",
			Script: func(s *Session) error {
				b, err := s.Frame(s.sendMsg([]byte("truncated send")))
				if err != nil {
					return err
				}
				if err := s.Raw(b[:len(b)/2]); err != nil {
					return err
				}
				return s.CloseWrite()
			},
			Want: torn,
		},
	}
}

// RawFPDU frames ulpdu by hand, without markers (also lengths the
// fpdu.Writer refuses), with a correct CRC when crc is on, in the Writer's
// byte order.
func RawFPDU(crc bool, ulpdu []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(ulpdu)))
	b = append(b, ulpdu...)
	b = append(b, make([]byte, fpdu.PadLen(len(ulpdu)))...)
	var c uint32
	if crc {
		c = fpdu.CRC32c(b)
	}
	return binary.LittleEndian.AppendUint32(b, c)
}
