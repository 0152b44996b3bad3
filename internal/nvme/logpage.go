package nvme

import "encoding/binary"

// Log page identifiers (LID, NVMe Base 1.4 Figure 191; NVMe-oF 1.1
// Figure 31 for discovery).
const (
	LogErrorInfo       uint8 = 0x01 // Error Information, 64 octets per entry
	LogSMART           uint8 = 0x02 // SMART / Health Information, 512 octets
	LogFirmwareSlot    uint8 = 0x03 // Firmware Slot Information, 512 octets
	LogChangedNSList   uint8 = 0x04 // Changed Namespace List, 4096 octets
	LogCmdEffects      uint8 = 0x05 // Commands Supported and Effects, 4096 octets
	LogDeviceSelfTest  uint8 = 0x06 // Device Self-test
	LogTelemetryHost   uint8 = 0x07 // Telemetry Host-Initiated
	LogTelemetryCtrl   uint8 = 0x08 // Telemetry Controller-Initiated
	LogANA             uint8 = 0x0C // Asymmetric Namespace Access
	LogPersistentEvent uint8 = 0x0D // Persistent Event Log
	LogDiscovery       uint8 = 0x70 // Discovery (NVMe-oF 1.1 §5.3)
	LogResvNotify      uint8 = 0x80 // Reservation Notification
	LogSanitize        uint8 = 0x81 // Sanitize Status
)

// Sizes of the fixed-size log pages.
const (
	ErrorInfoLen    = 64
	SMARTLogLen     = 512
	FirmwareSlotLen = 512
	ChangedNSLen    = 4096
	CmdEffectsLen   = 4096
)

var logNames = map[uint8]string{
	LogErrorInfo: "Error Information", LogSMART: "SMART / Health Information",
	LogFirmwareSlot: "Firmware Slot Information", LogChangedNSList: "Changed Namespace List",
	LogCmdEffects: "Commands Supported and Effects", LogDeviceSelfTest: "Device Self-test",
	LogTelemetryHost: "Telemetry Host-Initiated", LogTelemetryCtrl: "Telemetry Controller-Initiated",
	LogANA: "Asymmetric Namespace Access", LogPersistentEvent: "Persistent Event Log",
	LogDiscovery: "Discovery", LogResvNotify: "Reservation Notification", LogSanitize: "Sanitize Status",
}

// LogName names a log page identifier, or "log page 0xNN".
func LogName(lid uint8) string {
	return nameOr(logNames, lid, "log page")
}

// SMARTLog is the SMART / Health Information log page (NVMe Base 1.4
// Figure 194). The 128-bit counters are kept as their low 64 bits.
type SMARTLog struct {
	CriticalWarning   uint8  // (0)
	Temperature       uint16 // composite temperature, K (2:1)
	AvailSpare        uint8  // available spare, percent (3)
	AvailSpareThresh  uint8  // available spare threshold, percent (4)
	PercentUsed       uint8  // percentage used (5)
	EnduranceCritical uint8  // endurance group critical warning summary (6)
	DataUnitsRead     uint64 // thousands of 512-octet units read (47:32)
	DataUnitsWritten  uint64 // (63:48)
	HostReads         uint64 // host read commands (79:64)
	HostWrites        uint64 // host write commands (95:80)
	CtrlBusyTime      uint64 // minutes (111:96)
	PowerCycles       uint64 // (127:112)
	PowerOnHours      uint64 // (143:128)
	UnsafeShutdowns   uint64 // (159:144)
	MediaErrors       uint64 // (175:160)
	ErrorLogEntries   uint64 // (191:176)
	WarningTempTime   uint32 // minutes (195:192)
	CriticalTempTime  uint32 // minutes (199:196)
}

// Encode writes l into the first SMARTLogLen octets of b, the other
// octets zero.
func (l *SMARTLog) Encode(b []byte) error {
	if err := checkLen(b, SMARTLogLen, "SMART log"); err != nil {
		return err
	}
	b = b[:SMARTLogLen]
	clear(b)
	le := binary.LittleEndian
	b[0] = l.CriticalWarning
	le.PutUint16(b[1:], l.Temperature)
	b[3], b[4], b[5], b[6] = l.AvailSpare, l.AvailSpareThresh, l.PercentUsed, l.EnduranceCritical
	for i, v := range l.counters() {
		le.PutUint64(b[32+16*i:], *v)
	}
	le.PutUint32(b[192:], l.WarningTempTime)
	le.PutUint32(b[196:], l.CriticalTempTime)
	return nil
}

// DecodeSMARTLog reads a SMART log page (SMARTLogLen octets).
func DecodeSMARTLog(b []byte) (SMARTLog, error) {
	var l SMARTLog
	if err := checkLen(b, SMARTLogLen, "SMART log"); err != nil {
		return l, err
	}
	le := binary.LittleEndian
	l.CriticalWarning = b[0]
	l.Temperature = le.Uint16(b[1:])
	l.AvailSpare, l.AvailSpareThresh, l.PercentUsed, l.EnduranceCritical = b[3], b[4], b[5], b[6]
	for i, v := range l.counters() {
		*v = le.Uint64(b[32+16*i:])
	}
	l.WarningTempTime = le.Uint32(b[192:])
	l.CriticalTempTime = le.Uint32(b[196:])
	return l, nil
}

// counters returns the 128-bit counters in order from byte 32.
func (l *SMARTLog) counters() [10]*uint64 {
	return [10]*uint64{&l.DataUnitsRead, &l.DataUnitsWritten, &l.HostReads, &l.HostWrites,
		&l.CtrlBusyTime, &l.PowerCycles, &l.PowerOnHours, &l.UnsafeShutdowns, &l.MediaErrors, &l.ErrorLogEntries}
}

// ErrorInfo is an Error Information log entry (NVMe Base 1.4 Figure 193).
type ErrorInfo struct {
	ErrorCount uint64 // unique error identifier, 0 an invalid entry (7:0)
	SQID       uint16 // (9:8)
	CID        uint16 // (11:10)
	Status     Status // status field, phase tag removed (13:12, bits 15:1)
	ParamLoc   uint16 // byte (7:0) and bit (10:8) of the offending parameter (15:14)
	LBA        uint64 // (23:16)
	NSID       uint32 // (27:24)
	TrType     uint8  // transport type (37)
}

// Encode writes e into the first ErrorInfoLen octets of b.
func (e *ErrorInfo) Encode(b []byte) error {
	if err := checkLen(b, ErrorInfoLen, "error information entry"); err != nil {
		return err
	}
	b = b[:ErrorInfoLen]
	clear(b)
	le := binary.LittleEndian
	le.PutUint64(b[0:], e.ErrorCount)
	le.PutUint16(b[8:], e.SQID)
	le.PutUint16(b[10:], e.CID)
	le.PutUint16(b[12:], uint16(e.Status)<<1)
	le.PutUint16(b[14:], e.ParamLoc)
	le.PutUint64(b[16:], e.LBA)
	le.PutUint32(b[24:], e.NSID)
	b[37] = e.TrType
	return nil
}

// DecodeErrorInfo reads an error information entry.
func DecodeErrorInfo(b []byte) (ErrorInfo, error) {
	if err := checkLen(b, ErrorInfoLen, "error information entry"); err != nil {
		return ErrorInfo{}, err
	}
	le := binary.LittleEndian
	return ErrorInfo{ErrorCount: le.Uint64(b[0:]), SQID: le.Uint16(b[8:]), CID: le.Uint16(b[10:]),
		Status: Status(le.Uint16(b[12:]) >> 1), ParamLoc: le.Uint16(b[14:]), LBA: le.Uint64(b[16:]),
		NSID: le.Uint32(b[24:]), TrType: b[37]}, nil
}

// FirmwareSlot is the Firmware Slot Information log page (NVMe Base 1.4
// Figure 196): the active slot and the revisions of slots 1 to 7.
type FirmwareSlot struct {
	AFI uint8     // active firmware info: slot in bits 2:0, next reset's slot in bits 6:4
	FRS [7]string // firmware revision per slot, 8 ASCII octets each
}

// Encode writes f into the first FirmwareSlotLen octets of b.
func (f *FirmwareSlot) Encode(b []byte) error {
	if err := checkLen(b, FirmwareSlotLen, "firmware slot log"); err != nil {
		return err
	}
	b = b[:FirmwareSlotLen]
	clear(b)
	b[0] = f.AFI
	for i, s := range f.FRS {
		if s != "" {
			putString(b[8+8*i:16+8*i], s)
		}
	}
	return nil
}

// DecodeFirmwareSlot reads a firmware slot log page.
func DecodeFirmwareSlot(b []byte) (FirmwareSlot, error) {
	var f FirmwareSlot
	if err := checkLen(b, FirmwareSlotLen, "firmware slot log"); err != nil {
		return f, err
	}
	f.AFI = b[0]
	for i := range f.FRS {
		f.FRS[i] = getString(b[8+8*i : 16+8*i])
	}
	return f, nil
}

// Bits of a Commands Supported and Effects entry (NVMe Base 1.4 Figure
// 198).
const (
	EffectCSUPP uint32 = 1 << 0 // command supported
	EffectLBCC  uint32 = 1 << 1 // logical block content change
	EffectNCC   uint32 = 1 << 2 // namespace capability change
	EffectNIC   uint32 = 1 << 3 // namespace inventory change
	EffectCCC   uint32 = 1 << 4 // controller capability change
)

// CmdEffects is the Commands Supported and Effects log page: one dword
// per admin opcode (octets 1023:0) and per I/O opcode (2047:1024).
type CmdEffects struct {
	Admin [256]uint32
	IO    [256]uint32
}

// Encode writes e into the first CmdEffectsLen octets of b.
func (e *CmdEffects) Encode(b []byte) error {
	if err := checkLen(b, CmdEffectsLen, "commands supported and effects log"); err != nil {
		return err
	}
	clear(b[:CmdEffectsLen])
	for i := range 256 {
		binary.LittleEndian.PutUint32(b[4*i:], e.Admin[i])
		binary.LittleEndian.PutUint32(b[1024+4*i:], e.IO[i])
	}
	return nil
}

// DecodeCmdEffects reads a commands supported and effects log page.
func DecodeCmdEffects(b []byte) (CmdEffects, error) {
	var e CmdEffects
	if err := checkLen(b, CmdEffectsLen, "commands supported and effects log"); err != nil {
		return e, err
	}
	for i := range 256 {
		e.Admin[i] = binary.LittleEndian.Uint32(b[4*i:])
		e.IO[i] = binary.LittleEndian.Uint32(b[1024+4*i:])
	}
	return e, nil
}

// ChangedNSOverflow is the first entry of a Changed Namespace List that
// overflowed (more than 1024 namespaces changed).
const ChangedNSOverflow uint32 = 0xFFFFFFFF

// EncodeChangedNSList writes the Changed Namespace List log page (NVMe
// Base 1.4 Figure 197) into b (ChangedNSLen octets): ids in order, or
// the overflow marker when there are more than 1024.
func EncodeChangedNSList(b []byte, ids []uint32) error {
	if err := checkLen(b, ChangedNSLen, "changed namespace list"); err != nil {
		return err
	}
	clear(b[:ChangedNSLen])
	if len(ids) > ChangedNSLen/4 {
		binary.LittleEndian.PutUint32(b, ChangedNSOverflow)
		return nil
	}
	for i, id := range ids {
		binary.LittleEndian.PutUint32(b[4*i:], id)
	}
	return nil
}
