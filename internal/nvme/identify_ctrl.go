package nvme

import "encoding/binary"

// Controller is the Identify Controller data structure (CNS 0x01; NVMe
// Base 1.4 Figure 247, NVMe-oF 1.1 Figure 28 for bytes 2047:1792), with
// the fields a fabrics controller fills. Fields not here encode as zero.
// SN, MN and FR are ASCII, space padded; SUBNQN is NUL-terminated.
type Controller struct {
	VID       uint16         // PCI vendor ID (1:0)
	SSVID     uint16         // PCI subsystem vendor ID (3:2)
	SN        string         // serial number, 20 octets (23:4)
	MN        string         // model number, 40 octets (63:24)
	FR        string         // firmware revision, 8 octets (71:64)
	RAB       uint8          // recommended arbitration burst (72)
	IEEE      [3]byte        // IEEE OUI, least significant octet first (75:73)
	CMIC      uint8          // multi-path I/O and namespace sharing (76)
	MDTS      uint8          // maximum data transfer size, 2^n pages of CAP.MPSMIN; 0 no limit (77)
	CNTLID    uint16         // controller ID (79:78)
	VER       Version        // version (83:80)
	RTD3R     uint32         // RTD3 resume latency, µs (87:84)
	RTD3E     uint32         // RTD3 entry latency, µs (91:88)
	OAES      uint32         // optional asynchronous events supported (95:92)
	CTRATT    uint32         // controller attributes (99:96)
	RRLS      uint16         // read recovery levels supported (101:100)
	CNTRLTYPE uint8          // controller type: CtrlTypeIO, CtrlTypeDiscovery, CtrlTypeAdmin (111)
	FGUID     [16]byte       // FRU globally unique identifier (127:112)
	CRDT      [3]uint16      // command retry delay times 1-3, 100 ms units (133:128)
	OACS      uint16         // optional admin command support (257:256)
	ACL       uint8          // abort command limit, 0's based (258)
	AERL      uint8          // asynchronous event request limit, 0's based (259)
	FRMW      uint8          // firmware updates (260)
	LPA       uint8          // log page attributes (261)
	ELPE      uint8          // error log page entries, 0's based (262)
	NPSS      uint8          // number of power states support, 0's based (263)
	AVSCC     uint8          // admin vendor specific command configuration (264)
	APSTA     uint8          // autonomous power state transition attributes (265)
	WCTEMP    uint16         // warning composite temperature threshold, K (267:266)
	CCTEMP    uint16         // critical composite temperature threshold, K (269:268)
	KAS       uint16         // keep alive support, granularity in 100 ms units (321:320)
	ANACAP    uint8          // ANA capabilities (343)
	SQES      uint8          // SQ entry size: max in bits 7:4, required in 3:0 (512)
	CQES      uint8          // CQ entry size, likewise (513)
	MAXCMD    uint16         // maximum outstanding commands (515:514)
	NN        uint32         // number of namespaces (519:516)
	ONCS      uint16         // optional NVM command support (521:520)
	FUSES     uint16         // fused operation support (523:522)
	FNA       uint8          // format NVM attributes (524)
	VWC       uint8          // volatile write cache (525)
	AWUN      uint16         // atomic write unit normal, 0's based (527:526)
	AWUPF     uint16         // atomic write unit power fail, 0's based (529:528)
	NVSCC     uint8          // NVM vendor specific command configuration (530)
	NWPC      uint8          // namespace write protection capabilities (531)
	ACWU      uint16         // atomic compare & write unit, 0's based (533:532)
	SGLS      uint32         // SGL support (539:536)
	MNAN      uint32         // maximum number of allowed namespaces (543:540)
	SUBNQN    string         // NVM subsystem NQN (1023:768)
	IOCCSZ    uint32         // I/O queue command capsule size, 16-octet units (1795:1792)
	IORCSZ    uint32         // I/O queue response capsule size, 16-octet units (1799:1796)
	ICDOFF    uint16         // in-capsule data offset, 16-octet units (1801:1800)
	FCATT     uint8          // fabrics controller attributes: bit 0 static model (1802)
	MSDBD     uint8          // maximum SGL data block descriptors (1803)
	OFCS      uint16         // optional fabrics commands supported: bit 0 Disconnect (1805:1804)
	DCTYPE    uint8          // discovery controller type (1806, NVMe-oF 1.1a TP 8010)
	PSD       [32]PowerState // power state descriptors (3071:2048)
}

// PowerState is a power state descriptor (NVMe Base 1.4 Figure 248).
type PowerState struct {
	MP    uint16 // maximum power, in MXPS units (1:0)
	Flags uint8  // bit 0 MXPS (0.0001 W units), bit 1 NOPS (non-operational) (3)
	ENLAT uint32 // entry latency, µs (7:4)
	EXLAT uint32 // exit latency, µs (11:8)
	RRT   uint8  // relative read throughput (12)
	RRL   uint8  // relative read latency (13)
	RWT   uint8  // relative write throughput (14)
	RWL   uint8  // relative write latency (15)
	IDLP  uint16 // idle power (17:16)
	IPS   uint8  // idle power scale (18, bits 7:6)
	ACTP  uint16 // active power (21:20)
	APWS  uint8  // active power workload (bits 2:0) and scale (bits 7:6) (22)
}

// Controller types (CNTRLTYPE, NVMe Base 1.4 Figure 247).
const (
	CtrlTypeIO        uint8 = 1 // I/O controller
	CtrlTypeDiscovery uint8 = 2 // discovery controller
	CtrlTypeAdmin     uint8 = 3 // administrative controller
)

// Bits of Controller fields a fabrics controller sets.
const (
	CMICMultiPort   uint8  = 1 << 0  // CMIC: more than one port
	CMICMultiCtrl   uint8  = 1 << 1  // CMIC: more than one controller
	CMICANA         uint8  = 1 << 3  // CMIC: ANA reporting
	OAESNSAttr      uint32 = 1 << 8  // OAES: namespace attribute notices
	OAESFwActivate  uint32 = 1 << 9  // OAES: firmware activation notices
	OAESANAChange   uint32 = 1 << 11 // OAES: ANA change notices
	OAESDiscChange  uint32 = 1 << 31 // OAES: discovery log page change notices
	CTRATTHostID128 uint32 = 1 << 0  // CTRATT: 128-bit host identifier
	LPASMARTPerNS   uint8  = 1 << 0  // LPA: SMART log per namespace
	LPACmdEffects   uint8  = 1 << 1  // LPA: commands supported and effects log
	LPAExtended     uint8  = 1 << 2  // LPA: extended data for Get Log Page (NUMDU, LPOL/LPOU)
	ONCSCompare     uint16 = 1 << 0  // ONCS: Compare
	ONCSWriteUncorr uint16 = 1 << 1  // ONCS: Write Uncorrectable
	ONCSDSM         uint16 = 1 << 2  // ONCS: Dataset Management
	ONCSWriteZeroes uint16 = 1 << 3  // ONCS: Write Zeroes
	ONCSSaveSelect  uint16 = 1 << 4  // ONCS: Save field and Select field of features
	ONCSResv        uint16 = 1 << 5  // ONCS: reservations
	ONCSTimestamp   uint16 = 1 << 6  // ONCS: Timestamp feature
	VWCPresent      uint8  = 1 << 0  // VWC: a volatile write cache is present
	VWCFlushNSAll   uint8  = 3 << 1  // VWC bits 2:1 = 11b: Flush supports NSID FFFFFFFFh
	FUSESCompareWr  uint16 = 1 << 0  // FUSES: Compare and Write
	SGLSKeyed       uint32 = 1 << 2  // SGLS: Keyed SGL Data Block descriptor
	SGLSSupported   uint32 = 1 << 0  // SGLS bits 1:0 = 01b: SGLs, no alignment requirement
	SGLSOffset      uint32 = 1 << 20 // SGLS: Address field may be an offset (in-capsule data)
	SQESNVM         uint8  = 0x66    // SQES: 64-octet entries required and maximum
	CQESNVM         uint8  = 0x44    // CQES: 16-octet entries required and maximum
	FCATTStatic     uint8  = 1 << 0  // FCATT: static controller model
	OFCSDisconnect  uint16 = 1 << 0  // OFCS: Disconnect supported
)

// Encode writes c as an Identify Controller page into the first
// IdentifyLen octets of b, reserved and unknown fields zero.
func (c *Controller) Encode(b []byte) error {
	if err := checkLen(b, IdentifyLen, "Identify Controller"); err != nil {
		return err
	}
	b = b[:IdentifyLen]
	clear(b)
	le := binary.LittleEndian
	le.PutUint16(b[0:], c.VID)
	le.PutUint16(b[2:], c.SSVID)
	putString(b[4:24], c.SN)
	putString(b[24:64], c.MN)
	putString(b[64:72], c.FR)
	b[72] = c.RAB
	copy(b[73:76], c.IEEE[:])
	b[76] = c.CMIC
	b[77] = c.MDTS
	le.PutUint16(b[78:], c.CNTLID)
	le.PutUint32(b[80:], uint32(c.VER))
	le.PutUint32(b[84:], c.RTD3R)
	le.PutUint32(b[88:], c.RTD3E)
	le.PutUint32(b[92:], c.OAES)
	le.PutUint32(b[96:], c.CTRATT)
	le.PutUint16(b[100:], c.RRLS)
	b[111] = c.CNTRLTYPE
	copy(b[112:128], c.FGUID[:])
	for i, v := range c.CRDT {
		le.PutUint16(b[128+2*i:], v)
	}
	le.PutUint16(b[256:], c.OACS)
	b[258], b[259], b[260], b[261] = c.ACL, c.AERL, c.FRMW, c.LPA
	b[262], b[263], b[264], b[265] = c.ELPE, c.NPSS, c.AVSCC, c.APSTA
	le.PutUint16(b[266:], c.WCTEMP)
	le.PutUint16(b[268:], c.CCTEMP)
	le.PutUint16(b[320:], c.KAS)
	b[343] = c.ANACAP
	b[512], b[513] = c.SQES, c.CQES
	le.PutUint16(b[514:], c.MAXCMD)
	le.PutUint32(b[516:], c.NN)
	le.PutUint16(b[520:], c.ONCS)
	le.PutUint16(b[522:], c.FUSES)
	b[524], b[525] = c.FNA, c.VWC
	le.PutUint16(b[526:], c.AWUN)
	le.PutUint16(b[528:], c.AWUPF)
	b[530], b[531] = c.NVSCC, c.NWPC
	le.PutUint16(b[532:], c.ACWU)
	le.PutUint32(b[536:], c.SGLS)
	le.PutUint32(b[540:], c.MNAN)
	putNQN(b[768:1024], c.SUBNQN)
	le.PutUint32(b[1792:], c.IOCCSZ)
	le.PutUint32(b[1796:], c.IORCSZ)
	le.PutUint16(b[1800:], c.ICDOFF)
	b[1802], b[1803] = c.FCATT, c.MSDBD
	le.PutUint16(b[1804:], c.OFCS)
	b[1806] = c.DCTYPE
	for i := range c.PSD {
		c.PSD[i].encode(b[2048+32*i : 2048+32*(i+1)])
	}
	return nil
}

// DecodeController reads an Identify Controller page (IdentifyLen
// octets).
func DecodeController(b []byte) (Controller, error) {
	var c Controller
	if err := checkLen(b, IdentifyLen, "Identify Controller"); err != nil {
		return c, err
	}
	le := binary.LittleEndian
	c.VID = le.Uint16(b[0:])
	c.SSVID = le.Uint16(b[2:])
	c.SN = getString(b[4:24])
	c.MN = getString(b[24:64])
	c.FR = getString(b[64:72])
	c.RAB = b[72]
	copy(c.IEEE[:], b[73:76])
	c.CMIC = b[76]
	c.MDTS = b[77]
	c.CNTLID = le.Uint16(b[78:])
	c.VER = Version(le.Uint32(b[80:]))
	c.RTD3R = le.Uint32(b[84:])
	c.RTD3E = le.Uint32(b[88:])
	c.OAES = le.Uint32(b[92:])
	c.CTRATT = le.Uint32(b[96:])
	c.RRLS = le.Uint16(b[100:])
	c.CNTRLTYPE = b[111]
	copy(c.FGUID[:], b[112:128])
	for i := range c.CRDT {
		c.CRDT[i] = le.Uint16(b[128+2*i:])
	}
	c.OACS = le.Uint16(b[256:])
	c.ACL, c.AERL, c.FRMW, c.LPA = b[258], b[259], b[260], b[261]
	c.ELPE, c.NPSS, c.AVSCC, c.APSTA = b[262], b[263], b[264], b[265]
	c.WCTEMP = le.Uint16(b[266:])
	c.CCTEMP = le.Uint16(b[268:])
	c.KAS = le.Uint16(b[320:])
	c.ANACAP = b[343]
	c.SQES, c.CQES = b[512], b[513]
	c.MAXCMD = le.Uint16(b[514:])
	c.NN = le.Uint32(b[516:])
	c.ONCS = le.Uint16(b[520:])
	c.FUSES = le.Uint16(b[522:])
	c.FNA, c.VWC = b[524], b[525]
	c.AWUN = le.Uint16(b[526:])
	c.AWUPF = le.Uint16(b[528:])
	c.NVSCC, c.NWPC = b[530], b[531]
	c.ACWU = le.Uint16(b[532:])
	c.SGLS = le.Uint32(b[536:])
	c.MNAN = le.Uint32(b[540:])
	c.SUBNQN = getNQN(b[768:1024])
	c.IOCCSZ = le.Uint32(b[1792:])
	c.IORCSZ = le.Uint32(b[1796:])
	c.ICDOFF = le.Uint16(b[1800:])
	c.FCATT, c.MSDBD = b[1802], b[1803]
	c.OFCS = le.Uint16(b[1804:])
	c.DCTYPE = b[1806]
	for i := range c.PSD {
		c.PSD[i].decode(b[2048+32*i : 2048+32*(i+1)])
	}
	return c, nil
}

func (p *PowerState) encode(b []byte) {
	le := binary.LittleEndian
	le.PutUint16(b[0:], p.MP)
	b[3] = p.Flags
	le.PutUint32(b[4:], p.ENLAT)
	le.PutUint32(b[8:], p.EXLAT)
	b[12], b[13], b[14], b[15] = p.RRT, p.RRL, p.RWT, p.RWL
	le.PutUint16(b[16:], p.IDLP)
	b[18] = p.IPS << 6
	le.PutUint16(b[20:], p.ACTP)
	b[22] = p.APWS
}

func (p *PowerState) decode(b []byte) {
	le := binary.LittleEndian
	p.MP = le.Uint16(b[0:])
	p.Flags = b[3]
	p.ENLAT = le.Uint32(b[4:])
	p.EXLAT = le.Uint32(b[8:])
	p.RRT, p.RRL, p.RWT, p.RWL = b[12], b[13], b[14], b[15]
	p.IDLP = le.Uint16(b[16:])
	p.IPS = b[18] >> 6
	p.ACTP = le.Uint16(b[20:])
	p.APWS = b[22]
}

// MaxTransfer returns the largest transfer MDTS allows, in octets, for
// the minimum memory page size 2^(12+mpsmin); 0 means no limit.
func (c *Controller) MaxTransfer(mpsmin uint8) uint64 {
	if c.MDTS == 0 || int(c.MDTS)+12+int(mpsmin) >= 64 {
		return 0
	}
	return 1 << (uint(c.MDTS) + 12 + uint(mpsmin))
}
