package nvme

// Feature identifiers (FID, NVMe Base 1.4 Figure 285; NVMe-oF 1.1 §5.2).
const (
	FeatArbitration        uint8 = 0x01 // Arbitration
	FeatPowerMgmt          uint8 = 0x02 // Power Management
	FeatLBARangeType       uint8 = 0x03 // LBA Range Type
	FeatTempThreshold      uint8 = 0x04 // Temperature Threshold
	FeatErrorRecovery      uint8 = 0x05 // Error Recovery
	FeatVolatileWC         uint8 = 0x06 // Volatile Write Cache
	FeatNumQueues          uint8 = 0x07 // Number of Queues
	FeatIRQCoalesce        uint8 = 0x08 // Interrupt Coalescing
	FeatIRQConfig          uint8 = 0x09 // Interrupt Vector Configuration
	FeatWriteAtomic        uint8 = 0x0A // Write Atomicity Normal
	FeatAsyncEvent         uint8 = 0x0B // Asynchronous Event Configuration
	FeatAutoPST            uint8 = 0x0C // Autonomous Power State Transition
	FeatHostMemBuf         uint8 = 0x0D // Host Memory Buffer
	FeatTimestamp          uint8 = 0x0E // Timestamp
	FeatKeepAlive          uint8 = 0x0F // Keep Alive Timer
	FeatHostThermal        uint8 = 0x10 // Host Controlled Thermal Management
	FeatNonOpPowerState    uint8 = 0x11 // Non-Operational Power State Config
	FeatHostBehavior       uint8 = 0x16 // Host Behavior Support
	FeatSoftwareProgress   uint8 = 0x80 // Software Progress Marker
	FeatHostID             uint8 = 0x81 // Host Identifier
	FeatResvNotifyMask     uint8 = 0x82 // Reservation Notification Mask
	FeatResvPersistence    uint8 = 0x83 // Reservation Persistence
	FeatNSWriteProtectConf uint8 = 0x84 // Namespace Write Protection Config
)

var featureNames = map[uint8]string{
	FeatArbitration: "Arbitration", FeatPowerMgmt: "Power Management", FeatLBARangeType: "LBA Range Type",
	FeatTempThreshold: "Temperature Threshold", FeatErrorRecovery: "Error Recovery",
	FeatVolatileWC: "Volatile Write Cache", FeatNumQueues: "Number of Queues",
	FeatIRQCoalesce: "Interrupt Coalescing", FeatIRQConfig: "Interrupt Vector Configuration",
	FeatWriteAtomic: "Write Atomicity Normal", FeatAsyncEvent: "Asynchronous Event Configuration",
	FeatAutoPST: "Autonomous Power State Transition", FeatHostMemBuf: "Host Memory Buffer",
	FeatTimestamp: "Timestamp", FeatKeepAlive: "Keep Alive Timer",
	FeatHostThermal: "Host Controlled Thermal Management", FeatNonOpPowerState: "Non-Operational Power State Config",
	FeatHostBehavior: "Host Behavior Support", FeatSoftwareProgress: "Software Progress Marker",
	FeatHostID: "Host Identifier", FeatResvNotifyMask: "Reservation Notification Mask",
	FeatResvPersistence: "Reservation Persistence", FeatNSWriteProtectConf: "Namespace Write Protection Config",
}

// FeatureName names a feature identifier, or "feature 0xNN".
func FeatureName(fid uint8) string {
	return nameOr(featureNames, fid, "feature")
}

// NumQueues is the value of the Number of Queues feature (NVMe Base 1.4
// Figure 300-301): in Set Features CDW11 the numbers of I/O submission
// and completion queues requested (NSQR bits 15:0, NCQR bits 31:16), in
// the completion's DW0 the numbers allocated (NSQA, NCQA), all 0's
// based. 0xFFFF is invalid in a request.
type NumQueues struct {
	NSQ uint16 // submission queues, 0's based
	NCQ uint16 // completion queues, 0's based
}

// Uint32 returns the dword of q (CDW11 or DW0).
func (q NumQueues) Uint32() uint32 { return uint32(q.NSQ) | uint32(q.NCQ)<<16 }

// ParseNumQueues reads a Number of Queues dword.
func ParseNumQueues(v uint32) NumQueues { return NumQueues{NSQ: uint16(v), NCQ: uint16(v >> 16)} }

// Bits of the Asynchronous Event Configuration feature (CDW11, NVMe Base
// 1.4 Figure 306; NVMe-oF 1.1 for bit 31).
const (
	AECSMARTMask  uint32 = 0xFF    // SMART / health critical warnings
	AECNSAttr     uint32 = 1 << 8  // namespace attribute notices
	AECFwActivate uint32 = 1 << 9  // firmware activation notices
	AECANAChange  uint32 = 1 << 11 // ANA change notices
	AECDiscChange uint32 = 1 << 31 // discovery log page change notices
)

// VolatileWCEnable is bit 0 of the Volatile Write Cache feature: WCE.
const VolatileWCEnable uint32 = 1
