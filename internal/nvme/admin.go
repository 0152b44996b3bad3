package nvme

// Identify is the command-specific part of an Identify command (NVMe
// Base 1.4 Figure 244): CNS in CDW10 bits 7:0, CNTID in bits 31:16,
// NVMSETID in CDW11 bits 15:0 and, from NVMe 2.0, CSI in CDW11 bits
// 31:24. The namespace is the command's NSID.
type Identify struct {
	CNS      uint8
	CNTID    uint16
	NVMSETID uint16
	CSI      uint8
}

// Identify reads the Identify fields of a command.
func (c Command) Identify() Identify {
	return Identify{CNS: uint8(c.CDW10), CNTID: uint16(c.CDW10 >> 16), NVMSETID: uint16(c.CDW11), CSI: uint8(c.CDW11 >> 24)}
}

// Command returns an Identify command for namespace nsid whose 4096-octet
// data dptr describes.
func (k Identify) Command(cid uint16, nsid uint32, dptr SGL) Command {
	return Command{Opcode: AdminIdentify, Flags: FlagSGL, CID: cid, NSID: nsid, DPTR: dptr,
		CDW10: uint32(k.CNS) | uint32(k.CNTID)<<16, CDW11: uint32(k.NVMSETID) | uint32(k.CSI)<<24}
}

// GetLogPage is the command-specific part of a Get Log Page command (NVMe
// Base 1.4 Figure 189-191): LID in CDW10 bits 7:0, LSP bits 11:8, RAE
// bit 15, NUMDL bits 31:16; NUMDU in CDW11 bits 15:0, LSI bits 31:16;
// the offset LPOL/LPOU in CDW12-13; UUID index in CDW14 bits 6:0; CSI in
// CDW14 bits 31:24 (NVMe 2.0).
type GetLogPage struct {
	LID    uint8
	LSP    uint8  // log specific field (4 bits in 1.4; 7 bits in 2.0)
	RAE    bool   // retain asynchronous event
	NUMD   uint32 // number of dwords, 0's based (NUMDU:NUMDL)
	LSI    uint16 // log specific identifier
	Offset uint64 // LPOU:LPOL, in octets (a multiple of 4)
	UUID   uint8  // UUID index
}

// Length returns the octets asked for: (NUMD+1)*4.
func (g GetLogPage) Length() uint64 { return (uint64(g.NUMD) + 1) * 4 }

// GetLogPage reads the Get Log Page fields of a command.
func (c Command) GetLogPage() GetLogPage {
	return GetLogPage{
		LID:    uint8(c.CDW10),
		LSP:    uint8(c.CDW10>>8) & 0x7F,
		RAE:    c.CDW10&(1<<15) != 0,
		NUMD:   c.CDW10>>16 | (c.CDW11&0xFFFF)<<16,
		LSI:    uint16(c.CDW11 >> 16),
		Offset: uint64(c.CDW13)<<32 | uint64(c.CDW12),
		UUID:   uint8(c.CDW14) & 0x7F,
	}
}

// Command returns a Get Log Page command for namespace nsid (0xFFFFFFFF
// or 0 for controller-wide logs) whose data dptr describes. Length
// should be n*4 octets: NUMD is set to length/4 - 1.
func (g GetLogPage) Command(cid uint16, nsid uint32, dptr SGL) Command {
	c := Command{Opcode: AdminGetLogPage, Flags: FlagSGL, CID: cid, NSID: nsid, DPTR: dptr}
	c.CDW10 = uint32(g.LID) | uint32(g.LSP&0x7F)<<8 | g.NUMD<<16
	if g.RAE {
		c.CDW10 |= 1 << 15
	}
	c.CDW11 = g.NUMD>>16 | uint32(g.LSI)<<16
	c.CDW12, c.CDW13 = uint32(g.Offset), uint32(g.Offset>>32)
	c.CDW14 = uint32(g.UUID & 0x7F)
	return c
}

// NUMDFor returns the 0's based dword count for a transfer of n octets
// (n a positive multiple of 4).
func NUMDFor(n int) uint32 {
	if n < 4 {
		return 0
	}
	return uint32(n/4 - 1)
}

// Feature is the command-specific part of Get Features and Set Features
// (NVMe Base 1.4 Figure 283, 293): FID in CDW10 bits 7:0, for Get
// Features SEL in bits 10:8, for Set Features SV in bit 31; CDW11 and up
// are the feature's value (Value is CDW11). UUID index in CDW14 bits 6:0.
type Feature struct {
	FID   uint8
	SEL   uint8 // Get Features: FeatureSelCurrent ...
	SV    bool  // Set Features: save
	Value uint32
	UUID  uint8
}

// Get Features SEL values.
const (
	FeatureSelCurrent   uint8 = 0 // current
	FeatureSelDefault   uint8 = 1 // default
	FeatureSelSaved     uint8 = 2 // saved
	FeatureSelSupported uint8 = 3 // supported capabilities
)

// Feature reads the Get or Set Features fields of a command.
func (c Command) Feature() Feature {
	return Feature{FID: uint8(c.CDW10), SEL: uint8(c.CDW10>>8) & 7, SV: c.CDW10&(1<<31) != 0,
		Value: c.CDW11, UUID: uint8(c.CDW14) & 0x7F}
}

// GetCommand returns a Get Features command for f.FID, f.SEL, f.Value
// (CDW11) and namespace nsid, without data.
func (f Feature) GetCommand(cid uint16, nsid uint32) Command {
	return Command{Opcode: AdminGetFeatures, Flags: FlagSGL, CID: cid, NSID: nsid, DPTR: NullSGL(),
		CDW10: uint32(f.FID) | uint32(f.SEL&7)<<8, CDW11: f.Value, CDW14: uint32(f.UUID & 0x7F)}
}

// SetCommand returns a Set Features command writing f.Value (CDW11) to
// feature f.FID of namespace nsid, without data.
func (f Feature) SetCommand(cid uint16, nsid uint32) Command {
	c := Command{Opcode: AdminSetFeatures, Flags: FlagSGL, CID: cid, NSID: nsid, DPTR: NullSGL(),
		CDW10: uint32(f.FID), CDW11: f.Value, CDW14: uint32(f.UUID & 0x7F)}
	if f.SV {
		c.CDW10 |= 1 << 31
	}
	return c
}

// Abort is the command-specific part of an Abort command (NVMe Base 1.4
// Figure 153): SQID in CDW10 bits 15:0, CID bits 31:16. The completion's
// DW0 bit 0 is set when the command was not aborted.
type Abort struct {
	SQID uint16
	CID  uint16
}

// Abort reads the Abort fields of a command.
func (c Command) Abort() Abort { return Abort{SQID: uint16(c.CDW10), CID: uint16(c.CDW10 >> 16)} }

// Command returns the Abort command.
func (a Abort) Command(cid uint16) Command {
	return Command{Opcode: AdminAbort, Flags: FlagSGL, CID: cid, CDW10: uint32(a.SQID) | uint32(a.CID)<<16}
}

// AbortNotAborted is the Abort completion's DW0 when the command was not
// aborted (bit 0 set).
const AbortNotAborted uint32 = 1

// AsyncEvent is DW0 of an Asynchronous Event Request's completion (NVMe
// Base 1.4 Figure 146): the event type in bits 2:0, the event information
// in bits 15:8, the log page to read in bits 23:16.
type AsyncEvent struct {
	Type    uint8
	Info    uint8
	LogPage uint8
}

// Asynchronous event types.
const (
	AEReqTypeError    uint8 = 0 // error status
	AEReqTypeSMART    uint8 = 1 // SMART / health status
	AEReqTypeNotice   uint8 = 2 // notice
	AEReqTypeIOCmdSet uint8 = 6 // I/O command set specific
	AEReqTypeVendor   uint8 = 7 // vendor specific
)

// Notice event information (type AEReqTypeNotice).
const (
	AENoticeNSChanged       uint8 = 0x00 // namespace attribute changed; log LogChangedNSList
	AENoticeFirmware        uint8 = 0x01 // firmware activation starting
	AENoticeTelemetry       uint8 = 0x02 // telemetry log changed
	AENoticeANAChange       uint8 = 0x03 // asymmetric namespace access change
	AENoticeDiscoveryChange uint8 = 0xF0 // discovery log page change (NVMe-oF 1.1)
)

// DW0 returns the completion dword of e.
func (e AsyncEvent) DW0() uint32 {
	return uint32(e.Type&7) | uint32(e.Info)<<8 | uint32(e.LogPage)<<16
}

// ParseAsyncEvent reads an Asynchronous Event Request's completion DW0.
func ParseAsyncEvent(dw0 uint32) AsyncEvent {
	return AsyncEvent{Type: uint8(dw0) & 7, Info: uint8(dw0 >> 8), LogPage: uint8(dw0 >> 16)}
}
