package nvme

import (
	"bytes"
	"encoding/binary"
)

// IdentifyLen is the size of every Identify data structure.
const IdentifyLen = 4096

// Controller or Namespace Structure values, CNS in CDW10 bits 7:0 (NVMe
// Base 1.4 Figure 244; NVMe 2.0 for 0x05-0x08). A fabrics NVM controller
// answers CNSNamespace, CNSController, CNSActiveNSList and
// CNSNSDescList; it may answer CNSCSIndepNamespace and the I/O command
// set specific ones, and completes the others with Invalid Field in
// Command (NVMe Base 1.4 §5.15.1: CNS values that are reserved or not
// supported).
const (
	CNSNamespace        uint8 = 0x00 // Identify Namespace for NSID
	CNSController       uint8 = 0x01 // Identify Controller
	CNSActiveNSList     uint8 = 0x02 // active namespace IDs above NSID
	CNSNSDescList       uint8 = 0x03 // namespace identification descriptors of NSID
	CNSNVMSetList       uint8 = 0x04 // NVM set list
	CNSCSNamespace      uint8 = 0x05 // I/O command set specific Identify Namespace
	CNSCSController     uint8 = 0x06 // I/O command set specific Identify Controller
	CNSActiveNSListCS   uint8 = 0x07 // active namespace IDs of an I/O command set
	CNSCSIndepNamespace uint8 = 0x08 // I/O command set independent Identify Namespace
	CNSAllocatedNSList  uint8 = 0x10 // allocated namespace IDs
	CNSAllocatedNS      uint8 = 0x11 // Identify Namespace of an allocated NSID
	CNSNSCtrlList       uint8 = 0x12 // controllers attached to NSID
	CNSCtrlList         uint8 = 0x13 // controllers in the subsystem
	CNSPrimaryCtrlCaps  uint8 = 0x14 // primary controller capabilities
	CNSSecondaryCtrls   uint8 = 0x15 // secondary controller list
	CNSNSGranularity    uint8 = 0x16 // namespace granularity list
	CNSUUIDList         uint8 = 0x17 // UUID list
)

// NSIDAll is the broadcast namespace ID.
const NSIDAll uint32 = 0xFFFFFFFF

// Command set identifiers (CSI, NVMe 2.0).
const (
	CSINVM uint8 = 0 // the NVM command set
	CSIZNS uint8 = 2 // zoned namespaces
)

// putString writes s into f left-justified and padded with spaces, as
// Identify's ASCII fields (SN, MN, FR) are; a longer s is cut.
func putString(f []byte, s string) {
	n := copy(f, s)
	for i := n; i < len(f); i++ {
		f[i] = ' '
	}
}

// getString returns an ASCII field without its trailing spaces and NULs.
func getString(f []byte) string {
	return string(bytes.TrimRight(f, " \x00"))
}

// putNQN writes s NUL-padded into a 256-octet NQN field; a longer s is
// cut, leaving the terminating NUL.
func putNQN(f []byte, s string) {
	clear(f)
	if len(s) >= len(f) {
		s = s[:len(f)-1]
	}
	copy(f, s)
}

// getNQN returns an NQN field up to its first NUL (the whole field when
// it has none).
func getNQN(f []byte) string {
	s, _ := cString(f)
	return s
}

// ActiveNSListMax is the most namespace IDs a namespace list, the
// Identify data of CNSActiveNSList, holds (NVMe Base 1.4 §4.9,
// "Namespace List"): 1024 IDs, ascending, the rest zero.
const ActiveNSListMax = IdentifyLen / 4

// EncodeNSList writes the namespace IDs of ids greater than after, in
// ascending order as given, into b (IdentifyLen octets, zero-filled
// beyond the list), at most ActiveNSListMax of them. ids must be
// ascending.
func EncodeNSList(b []byte, ids []uint32, after uint32) error {
	if err := checkLen(b, IdentifyLen, "namespace list"); err != nil {
		return err
	}
	clear(b[:IdentifyLen])
	n := 0
	for _, id := range ids {
		if id <= after || id == 0 || id == NSIDAll {
			continue
		}
		if n == ActiveNSListMax {
			break
		}
		binary.LittleEndian.PutUint32(b[4*n:], id)
		n++
	}
	return nil
}

// DecodeNSList returns the namespace IDs of a namespace list, up to the
// first zero entry, appended to dst[:0].
func DecodeNSList(dst []uint32, b []byte) ([]uint32, error) {
	dst = dst[:0]
	if err := checkLen(b, IdentifyLen, "namespace list"); err != nil {
		return dst, err
	}
	for i := 0; i < IdentifyLen; i += 4 {
		id := binary.LittleEndian.Uint32(b[i:])
		if id == 0 {
			break
		}
		dst = append(dst, id)
	}
	return dst, nil
}

// Namespace Identifier Types of the namespace identification descriptor
// list (NVMe Base 1.4 Figure 247; CSI from NVMe 2.0).
const (
	NIDTEUI64 uint8 = 1 // IEEE Extended Unique Identifier, 8 octets
	NIDTNGUID uint8 = 2 // Namespace Globally Unique Identifier, 16 octets
	NIDTUUID  uint8 = 3 // Universally Unique Identifier, 16 octets
	NIDTCSI   uint8 = 4 // Command Set Identifier, 1 octet
)

// NIDLen returns the NIDL of type nidt, or 0 for an unknown type.
func NIDLen(nidt uint8) int {
	switch nidt {
	case NIDTEUI64:
		return 8
	case NIDTNGUID, NIDTUUID:
		return 16
	case NIDTCSI:
		return 1
	}
	return 0
}

// NSDescriptor is one namespace identification descriptor: a type and
// its identifier (NIDL octets).
type NSDescriptor struct {
	NIDT uint8
	NID  []byte
}

// EncodeNSDescList writes descs as a namespace identification descriptor
// list into b (IdentifyLen octets, zero after the last descriptor, which
// ends the list). It fails with a *LengthError if they do not fit.
func EncodeNSDescList(b []byte, descs []NSDescriptor) error {
	if err := checkLen(b, IdentifyLen, "namespace identification descriptor list"); err != nil {
		return err
	}
	clear(b[:IdentifyLen])
	off := 0
	for _, d := range descs {
		n := 4 + len(d.NID)
		if off+n > IdentifyLen || len(d.NID) > 255 {
			return &LengthError{What: "namespace identification descriptor list", Need: off + n, Got: IdentifyLen}
		}
		b[off], b[off+1] = d.NIDT, byte(len(d.NID))
		copy(b[off+4:], d.NID)
		off += n
	}
	return nil
}

// DecodeNSDescList reads a namespace identification descriptor list up
// to its first descriptor of NIDT 0 (or NIDL 0). The NIDs alias b.
func DecodeNSDescList(b []byte) ([]NSDescriptor, error) {
	if err := checkLen(b, IdentifyLen, "namespace identification descriptor list"); err != nil {
		return nil, err
	}
	var out []NSDescriptor
	for off := 0; off+4 <= IdentifyLen; {
		t, n := b[off], int(b[off+1])
		if t == 0 || n == 0 {
			break
		}
		if off+4+n > IdentifyLen {
			return out, &LengthError{What: "namespace identification descriptor", Need: off + 4 + n, Got: IdentifyLen}
		}
		out = append(out, NSDescriptor{NIDT: t, NID: b[off+4 : off+4+n]})
		off += 4 + n
	}
	return out, nil
}
