package nvme

import "strconv"

// Controller property offsets (NVMe-oF 1.1 Figure 4; NVMe Base 1.4
// §3.1, Figure 78). CAP, ASQ and ACQ are 8 octets, the others 4.
const (
	PropCAP   uint32 = 0x00 // Controller Capabilities (8)
	PropVS    uint32 = 0x08 // Version
	PropINTMS uint32 = 0x0C // Interrupt Mask Set (reserved on fabrics)
	PropINTMC uint32 = 0x10 // Interrupt Mask Clear (reserved on fabrics)
	PropCC    uint32 = 0x14 // Controller Configuration
	PropCSTS  uint32 = 0x1C // Controller Status
	PropNSSR  uint32 = 0x20 // NVM Subsystem Reset
	PropAQA   uint32 = 0x24 // Admin Queue Attributes (reserved on fabrics)
	PropASQ   uint32 = 0x28 // Admin SQ Base Address (reserved on fabrics)
	PropACQ   uint32 = 0x30 // Admin CQ Base Address (reserved on fabrics)
)

// NSSRReset is the value ("NVMe") written to NSSR to reset the NVM
// subsystem.
const NSSRReset uint32 = 0x4E564D65

// CAP is the Controller Capabilities property (NVMe Base 1.4 Figure 79).
type CAP struct {
	MQES   uint16 // maximum queue entries supported, 0's based (15:0)
	CQR    bool   // contiguous queues required (16); fabrics: 1
	AMS    uint8  // arbitration mechanisms supported (18:17)
	TO     uint8  // timeout for CSTS.RDY to change, in 500 ms units (31:24)
	DSTRD  uint8  // doorbell stride (35:32); fabrics: 0
	NSSRS  bool   // NVM subsystem reset supported (36)
	CSS    uint8  // command sets supported (44:37); bit 0 the NVM command set
	BPS    bool   // boot partition support (45)
	MPSMIN uint8  // memory page size minimum, 2^(12+MPSMIN) (51:48)
	MPSMAX uint8  // memory page size maximum (55:52)
	PMRS   bool   // persistent memory region supported (56)
	CMBS   bool   // controller memory buffer supported (57)
}

// CAP.CSS bits.
const (
	CSSNVM       uint8 = 1 << 0 // the NVM command set
	CSSIOSets    uint8 = 1 << 6 // one or more I/O command sets (NVMe 2.0)
	CSSAdminOnly uint8 = 1 << 7 // no I/O command set, admin only
)

// ParseCAP reads a CAP value.
func ParseCAP(v uint64) CAP {
	return CAP{
		MQES:   uint16(v),
		CQR:    v>>16&1 != 0,
		AMS:    uint8(v>>17) & 3,
		TO:     uint8(v >> 24),
		DSTRD:  uint8(v>>32) & 0xF,
		NSSRS:  v>>36&1 != 0,
		CSS:    uint8(v >> 37),
		BPS:    v>>45&1 != 0,
		MPSMIN: uint8(v>>48) & 0xF,
		MPSMAX: uint8(v>>52) & 0xF,
		PMRS:   v>>56&1 != 0,
		CMBS:   v>>57&1 != 0,
	}
}

// Uint64 returns the property value of c.
func (c CAP) Uint64() uint64 {
	return uint64(c.MQES) | b2u(c.CQR)<<16 | uint64(c.AMS&3)<<17 | uint64(c.TO)<<24 |
		uint64(c.DSTRD&0xF)<<32 | b2u(c.NSSRS)<<36 | uint64(c.CSS)<<37 | b2u(c.BPS)<<45 |
		uint64(c.MPSMIN&0xF)<<48 | uint64(c.MPSMAX&0xF)<<52 | b2u(c.PMRS)<<56 | b2u(c.CMBS)<<57
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// Version is the VS property and Identify Controller's VER (NVMe Base 1.4
// Figure 80): major in bits 31:16, minor 15:8, tertiary 7:0.
type Version uint32

// Versions of the NVMe specification.
const (
	Version1_2 Version = 0x00010200
	Version1_3 Version = 0x00010300
	Version1_4 Version = 0x00010400
	Version2_0 Version = 0x00020000
)

// MakeVersion returns the version major.minor.tertiary.
func MakeVersion(major uint16, minor, tertiary uint8) Version {
	return Version(uint32(major)<<16 | uint32(minor)<<8 | uint32(tertiary))
}

// Major returns the major version.
func (v Version) Major() uint16 { return uint16(v >> 16) }

// Minor returns the minor version.
func (v Version) Minor() uint8 { return uint8(v >> 8) }

// Tertiary returns the tertiary version.
func (v Version) Tertiary() uint8 { return uint8(v) }

// String returns "major.minor" or "major.minor.tertiary".
func (v Version) String() string {
	s := strconv.Itoa(int(v.Major())) + "." + strconv.Itoa(int(v.Minor()))
	if v.Tertiary() != 0 {
		s += "." + strconv.Itoa(int(v.Tertiary()))
	}
	return s
}

// CC is the Controller Configuration property (NVMe Base 1.4 Figure 82).
type CC struct {
	EN     bool  // enable (0)
	CSS    uint8 // I/O command set selected (6:4): 0 NVM
	MPS    uint8 // memory page size, 2^(12+MPS) (10:7)
	AMS    uint8 // arbitration mechanism selected (13:11)
	SHN    uint8 // shutdown notification (15:14): SHNNone, SHNNormal, SHNAbrupt
	IOSQES uint8 // I/O SQ entry size, 2^n (19:16): 6 for 64 octets
	IOCQES uint8 // I/O CQ entry size, 2^n (23:20): 4 for 16 octets
}

// CC.SHN values.
const (
	SHNNone   uint8 = 0 // no notification
	SHNNormal uint8 = 1 // normal shutdown
	SHNAbrupt uint8 = 2 // abrupt shutdown
)

// ParseCC reads a CC value; reserved bits are dropped.
func ParseCC(v uint32) CC {
	return CC{
		EN:     v&1 != 0,
		CSS:    uint8(v>>4) & 7,
		MPS:    uint8(v>>7) & 0xF,
		AMS:    uint8(v>>11) & 7,
		SHN:    uint8(v>>14) & 3,
		IOSQES: uint8(v>>16) & 0xF,
		IOCQES: uint8(v>>20) & 0xF,
	}
}

// Uint32 returns the property value of c.
func (c CC) Uint32() uint32 {
	return uint32(b2u(c.EN)) | uint32(c.CSS&7)<<4 | uint32(c.MPS&0xF)<<7 | uint32(c.AMS&7)<<11 |
		uint32(c.SHN&3)<<14 | uint32(c.IOSQES&0xF)<<16 | uint32(c.IOCQES&0xF)<<20
}

// CSTS is the Controller Status property (NVMe Base 1.4 Figure 83).
type CSTS struct {
	RDY   bool  // ready (0)
	CFS   bool  // controller fatal status (1)
	SHST  uint8 // shutdown status (3:2): SHSTNormal, SHSTOccurring, SHSTComplete
	NSSRO bool  // NVM subsystem reset occurred (4)
	PP    bool  // processing paused (5)
}

// CSTS.SHST values.
const (
	SHSTNormal    uint8 = 0 // normal operation
	SHSTOccurring uint8 = 1 // shutdown processing occurring
	SHSTComplete  uint8 = 2 // shutdown processing complete
)

// ParseCSTS reads a CSTS value.
func ParseCSTS(v uint32) CSTS {
	return CSTS{RDY: v&1 != 0, CFS: v&2 != 0, SHST: uint8(v>>2) & 3, NSSRO: v&0x10 != 0, PP: v&0x20 != 0}
}

// Uint32 returns the property value of s.
func (s CSTS) Uint32() uint32 {
	return uint32(b2u(s.RDY) | b2u(s.CFS)<<1 | uint64(s.SHST&3)<<2 | b2u(s.NSSRO)<<4 | b2u(s.PP)<<5)
}

// PropertySizeOf returns the size in octets of the property at ofst (8
// for CAP, ASQ and ACQ, else 4).
func PropertySizeOf(ofst uint32) int {
	switch ofst {
	case PropCAP, PropASQ, PropACQ:
		return 8
	}
	return 4
}
