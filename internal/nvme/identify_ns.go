package nvme

import "encoding/binary"

// LBAFormatsMax is the most LBA formats a namespace reports (NLBAF is
// 0's based; NVMe 2.0 raised the limit from 16 to 64).
const LBAFormatsMax = 64

// LBAFormat is an LBA format descriptor (NVMe Base 1.4 Figure 250).
type LBAFormat struct {
	MS    uint16 // metadata size per block, octets (15:0)
	LBADS uint8  // LBA data size, 2^n octets; 9 for 512, 12 for 4096 (23:16)
	RP    uint8  // relative performance, 0 best (25:24)
}

// Namespace is the Identify Namespace data structure of the NVM command
// set (CNS 0x00; NVMe Base 1.4 Figure 249), with the fields a fabrics
// controller fills. Fields not here encode as zero.
type Namespace struct {
	NSZE     uint64                   // namespace size in logical blocks (7:0)
	NCAP     uint64                   // namespace capacity (15:8)
	NUSE     uint64                   // namespace utilization (23:16)
	NSFEAT   uint8                    // namespace features (24)
	NLBAF    uint8                    // number of LBA formats, 0's based (25)
	FLBAS    uint8                    // formatted LBA size: format index in bits 3:0 (and 6:5 from NVMe 2.0) (26)
	MC       uint8                    // metadata capabilities (27)
	DPC      uint8                    // end-to-end data protection capabilities (28)
	DPS      uint8                    // end-to-end data protection type settings (29)
	NMIC     uint8                    // namespace multi-path I/O and sharing: bit 0 shared (30)
	RESCAP   uint8                    // reservation capabilities (31)
	FPI      uint8                    // format progress indicator (32)
	DLFEAT   uint8                    // deallocate logical block features (33)
	NAWUN    uint16                   // namespace atomic write unit normal, 0's based (35:34)
	NAWUPF   uint16                   // namespace atomic write unit power fail (37:36)
	NACWU    uint16                   // namespace atomic compare & write unit (39:38)
	NABSN    uint16                   // namespace atomic boundary size normal (41:40)
	NABO     uint16                   // namespace atomic boundary offset (43:42)
	NABSPF   uint16                   // namespace atomic boundary size power fail (45:44)
	NOIOB    uint16                   // namespace optimal I/O boundary, blocks (47:46)
	NVMCAP   [16]byte                 // NVM capacity, octets, 128-bit little-endian (63:48)
	NPWG     uint16                   // preferred write granularity, 0's based (65:64)
	NPWA     uint16                   // preferred write alignment (67:66)
	NPDG     uint16                   // preferred deallocate granularity (69:68)
	NPDA     uint16                   // preferred deallocate alignment (71:70)
	NOWS     uint16                   // optimal write size (73:72)
	ANAGRPID uint32                   // ANA group identifier (95:92)
	NSATTR   uint8                    // namespace attributes: bit 0 write protected (99)
	NVMSETID uint16                   // NVM set identifier (101:100)
	ENDGID   uint16                   // endurance group identifier (103:102)
	NGUID    [16]byte                 // namespace globally unique identifier (119:104)
	EUI64    [8]byte                  // IEEE extended unique identifier (127:120)
	LBAF     [LBAFormatsMax]LBAFormat // LBA formats (383:128)
}

// Bits of Namespace fields.
const (
	NSFEATThin       uint8 = 1 << 0 // NSFEAT: thin provisioning
	NSFEATAtomics    uint8 = 1 << 1 // NSFEAT: NAWUN, NAWUPF, NACWU valid
	NSFEATDeallocErr uint8 = 1 << 2 // NSFEAT: DULBE supported
	NSFEATIDReuse    uint8 = 1 << 3 // NSFEAT: NGUID and EUI64 are never reused
	NSFEATIOOpt      uint8 = 1 << 4 // NSFEAT: NPWG, NPWA, NPDG, NPDA, NOWS valid
	NMICShared       uint8 = 1 << 0 // NMIC: may be attached to more than one controller
	NSATTRReadOnly   uint8 = 1 << 0 // NSATTR: write protected
	DLFEATZeroes     uint8 = 1      // DLFEAT bits 2:0 = 001b: deallocated blocks read as zeroes
	DLFEATWZDeac     uint8 = 1 << 3 // DLFEAT: Write Zeroes supports DEAC
)

// FormatIndex returns the index of the LBA format in use (FLBAS bits
// 3:0, with bits 6:5 as bits 5:4 from NVMe 2.0).
func (n *Namespace) FormatIndex() int {
	return int(n.FLBAS&0xF) | int(n.FLBAS&0x60)>>1
}

// BlockSize returns the data size of a logical block in the format in
// use, in octets, or 0 when LBADS is unusable (below 9 or above 31).
func (n *Namespace) BlockSize() uint32 {
	i := n.FormatIndex()
	if i >= LBAFormatsMax {
		return 0
	}
	ds := n.LBAF[i].LBADS
	if ds < 9 || ds > 31 {
		return 0
	}
	return 1 << ds
}

// Encode writes n as an Identify Namespace page into the first
// IdentifyLen octets of b, reserved and unknown fields zero.
func (n *Namespace) Encode(b []byte) error {
	if err := checkLen(b, IdentifyLen, "Identify Namespace"); err != nil {
		return err
	}
	b = b[:IdentifyLen]
	clear(b)
	le := binary.LittleEndian
	le.PutUint64(b[0:], n.NSZE)
	le.PutUint64(b[8:], n.NCAP)
	le.PutUint64(b[16:], n.NUSE)
	b[24], b[25], b[26], b[27] = n.NSFEAT, n.NLBAF, n.FLBAS, n.MC
	b[28], b[29], b[30], b[31] = n.DPC, n.DPS, n.NMIC, n.RESCAP
	b[32], b[33] = n.FPI, n.DLFEAT
	for i, v := range [...]uint16{n.NAWUN, n.NAWUPF, n.NACWU, n.NABSN, n.NABO, n.NABSPF, n.NOIOB} {
		le.PutUint16(b[34+2*i:], v)
	}
	copy(b[48:64], n.NVMCAP[:])
	for i, v := range [...]uint16{n.NPWG, n.NPWA, n.NPDG, n.NPDA, n.NOWS} {
		le.PutUint16(b[64+2*i:], v)
	}
	le.PutUint32(b[92:], n.ANAGRPID)
	b[99] = n.NSATTR
	le.PutUint16(b[100:], n.NVMSETID)
	le.PutUint16(b[102:], n.ENDGID)
	copy(b[104:120], n.NGUID[:])
	copy(b[120:128], n.EUI64[:])
	for i, f := range n.LBAF {
		o := 128 + 4*i
		le.PutUint16(b[o:], f.MS)
		b[o+2], b[o+3] = f.LBADS, f.RP&3
	}
	return nil
}

// DecodeNamespace reads an Identify Namespace page (IdentifyLen octets).
func DecodeNamespace(b []byte) (Namespace, error) {
	var n Namespace
	if err := checkLen(b, IdentifyLen, "Identify Namespace"); err != nil {
		return n, err
	}
	le := binary.LittleEndian
	n.NSZE = le.Uint64(b[0:])
	n.NCAP = le.Uint64(b[8:])
	n.NUSE = le.Uint64(b[16:])
	n.NSFEAT, n.NLBAF, n.FLBAS, n.MC = b[24], b[25], b[26], b[27]
	n.DPC, n.DPS, n.NMIC, n.RESCAP = b[28], b[29], b[30], b[31]
	n.FPI, n.DLFEAT = b[32], b[33]
	for i, p := range [...]*uint16{&n.NAWUN, &n.NAWUPF, &n.NACWU, &n.NABSN, &n.NABO, &n.NABSPF, &n.NOIOB} {
		*p = le.Uint16(b[34+2*i:])
	}
	copy(n.NVMCAP[:], b[48:64])
	for i, p := range [...]*uint16{&n.NPWG, &n.NPWA, &n.NPDG, &n.NPDA, &n.NOWS} {
		*p = le.Uint16(b[64+2*i:])
	}
	n.ANAGRPID = le.Uint32(b[92:])
	n.NSATTR = b[99]
	n.NVMSETID = le.Uint16(b[100:])
	n.ENDGID = le.Uint16(b[102:])
	copy(n.NGUID[:], b[104:120])
	copy(n.EUI64[:], b[120:128])
	for i := range n.LBAF {
		o := 128 + 4*i
		n.LBAF[i] = LBAFormat{MS: le.Uint16(b[o:]), LBADS: b[o+2], RP: b[o+3] & 3}
	}
	return n, nil
}
