package nvme

// Admin command opcodes (NVMe Base 1.4 Figure 139; NVMe-oF 1.1 Figure 8).
const (
	AdminDeleteSQ         uint8 = 0x00 // Delete I/O Submission Queue
	AdminCreateSQ         uint8 = 0x01 // Create I/O Submission Queue
	AdminGetLogPage       uint8 = 0x02 // Get Log Page
	AdminDeleteCQ         uint8 = 0x04 // Delete I/O Completion Queue
	AdminCreateCQ         uint8 = 0x05 // Create I/O Completion Queue
	AdminIdentify         uint8 = 0x06 // Identify
	AdminAbort            uint8 = 0x08 // Abort
	AdminSetFeatures      uint8 = 0x09 // Set Features
	AdminGetFeatures      uint8 = 0x0A // Get Features
	AdminAsyncEvent       uint8 = 0x0C // Asynchronous Event Request
	AdminNSManagement     uint8 = 0x0D // Namespace Management
	AdminFirmwareCommit   uint8 = 0x10 // Firmware Commit
	AdminFirmwareDownload uint8 = 0x11 // Firmware Image Download
	AdminDeviceSelfTest   uint8 = 0x14 // Device Self-test
	AdminNSAttachment     uint8 = 0x15 // Namespace Attachment
	AdminKeepAlive        uint8 = 0x18 // Keep Alive
	AdminDirectiveSend    uint8 = 0x19 // Directive Send
	AdminDirectiveRecv    uint8 = 0x1A // Directive Receive
	AdminVirtualization   uint8 = 0x1C // Virtualization Management
	AdminMISend           uint8 = 0x1D // NVMe-MI Send
	AdminMIRecv           uint8 = 0x1E // NVMe-MI Receive
	AdminDoorbellBuffer   uint8 = 0x7C // Doorbell Buffer Config
	AdminFabrics          uint8 = 0x7F // Fabrics command (NVMe-oF 1.1 §3)
	AdminFormatNVM        uint8 = 0x80 // Format NVM
	AdminSecuritySend     uint8 = 0x81 // Security Send
	AdminSecurityRecv     uint8 = 0x82 // Security Receive
	AdminSanitize         uint8 = 0x84 // Sanitize
	AdminGetLBAStatus     uint8 = 0x86 // Get LBA Status
)

// NVM command set opcodes (NVMe Base 1.4 Figure 346).
const (
	NVMFlush          uint8 = 0x00 // Flush
	NVMWrite          uint8 = 0x01 // Write
	NVMRead           uint8 = 0x02 // Read
	NVMWriteUncorrect uint8 = 0x04 // Write Uncorrectable
	NVMCompare        uint8 = 0x05 // Compare
	NVMWriteZeroes    uint8 = 0x08 // Write Zeroes
	NVMDatasetMgmt    uint8 = 0x09 // Dataset Management
	NVMVerify         uint8 = 0x0C // Verify
	NVMResvRegister   uint8 = 0x0D // Reservation Register
	NVMResvReport     uint8 = 0x0E // Reservation Report
	NVMResvAcquire    uint8 = 0x11 // Reservation Acquire
	NVMResvRelease    uint8 = 0x15 // Reservation Release
	NVMCopy           uint8 = 0x19 // Copy
	NVMFabrics        uint8 = 0x7F // Fabrics command on an I/O queue
)

var adminNames = map[uint8]string{
	AdminDeleteSQ: "Delete I/O Submission Queue", AdminCreateSQ: "Create I/O Submission Queue",
	AdminGetLogPage: "Get Log Page", AdminDeleteCQ: "Delete I/O Completion Queue",
	AdminCreateCQ: "Create I/O Completion Queue", AdminIdentify: "Identify", AdminAbort: "Abort",
	AdminSetFeatures: "Set Features", AdminGetFeatures: "Get Features",
	AdminAsyncEvent: "Asynchronous Event Request", AdminNSManagement: "Namespace Management",
	AdminFirmwareCommit: "Firmware Commit", AdminFirmwareDownload: "Firmware Image Download",
	AdminDeviceSelfTest: "Device Self-test", AdminNSAttachment: "Namespace Attachment",
	AdminKeepAlive: "Keep Alive", AdminDirectiveSend: "Directive Send",
	AdminDirectiveRecv: "Directive Receive", AdminVirtualization: "Virtualization Management",
	AdminMISend: "NVMe-MI Send", AdminMIRecv: "NVMe-MI Receive",
	AdminDoorbellBuffer: "Doorbell Buffer Config", AdminFabrics: "Fabrics",
	AdminFormatNVM: "Format NVM", AdminSecuritySend: "Security Send",
	AdminSecurityRecv: "Security Receive", AdminSanitize: "Sanitize", AdminGetLBAStatus: "Get LBA Status",
}

var nvmNames = map[uint8]string{
	NVMFlush: "Flush", NVMWrite: "Write", NVMRead: "Read", NVMWriteUncorrect: "Write Uncorrectable",
	NVMCompare: "Compare", NVMWriteZeroes: "Write Zeroes", NVMDatasetMgmt: "Dataset Management",
	NVMVerify: "Verify", NVMResvRegister: "Reservation Register", NVMResvReport: "Reservation Report",
	NVMResvAcquire: "Reservation Acquire", NVMResvRelease: "Reservation Release", NVMCopy: "Copy",
	NVMFabrics: "Fabrics",
}

// OpcodeName names an opcode of the admin command set (admin true) or
// of the NVM command set; an unknown opcode is "opcode 0xNN".
func OpcodeName(op uint8, admin bool) string {
	if admin {
		return nameOr(adminNames, op, "opcode")
	}
	return nameOr(nvmNames, op, "opcode")
}

// nameOr returns names[v], or what followed by v in hexadecimal
// ("opcode 0x7e") when names has no entry for v.
func nameOr(names map[uint8]string, v uint8, what string) string {
	if s, ok := names[v]; ok {
		return s
	}
	return what + " 0x" + hex2(v)
}

// hex2 formats v as two lower-case hexadecimal digits.
func hex2(v uint8) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[v>>4], digits[v&15]})
}
