package nvme

import "strconv"

// Status is a completion's Status Field without the phase tag (NVMe Base
// 1.4 Figure 125), i.e. bits 15:1 of CQE dword 3's upper half shifted
// right by one: SC in bits 7:0, SCT in bits 10:8, CRD in bits 12:11, More
// in bit 13 and DNR in bit 14. The constants below are SCT<<8 | SC with
// CRD, More and DNR clear; compare a received status with them through
// Code.
type Status uint16

// Status Code Types (NVMe Base 1.4 Figure 126).
const (
	SCTGeneric         uint8 = 0 // Generic Command Status
	SCTCommandSpecific uint8 = 1 // Command Specific Status
	SCTMedia           uint8 = 2 // Media and Data Integrity Errors
	SCTPath            uint8 = 3 // Path Related Status
	SCTVendor          uint8 = 7 // Vendor Specific
)

// Bits of Status above the code.
const (
	StatusCRDMask Status = 0x1800 // CRD: Command Retry Delay (bits 12:11)
	StatusMore    Status = 0x2000 // M: more status information in the Error Information log
	StatusDNR     Status = 0x4000 // DNR: Do Not Retry
	statusCode    Status = 0x07FF // SCT and SC
)

// Generic command status (SCT 0, NVMe Base 1.4 Figure 127, Figure 128).
const (
	StatusSuccess                  Status = 0x00 // Successful Completion
	StatusInvalidOpcode            Status = 0x01 // Invalid Command Opcode
	StatusInvalidField             Status = 0x02 // Invalid Field in Command
	StatusCIDConflict              Status = 0x03 // Command ID Conflict
	StatusDataTransferError        Status = 0x04 // Data Transfer Error
	StatusPowerLoss                Status = 0x05 // Commands Aborted due to Power Loss Notification
	StatusInternalError            Status = 0x06 // Internal Error
	StatusAbortRequested           Status = 0x07 // Command Abort Requested
	StatusAbortSQDeleted           Status = 0x08 // Command Aborted due to SQ Deletion
	StatusAbortFailedFused         Status = 0x09 // Command Aborted due to Failed Fused Command
	StatusAbortMissingFused        Status = 0x0A // Command Aborted due to Missing Fused Command
	StatusInvalidNamespace         Status = 0x0B // Invalid Namespace or Format
	StatusCommandSequenceError     Status = 0x0C // Command Sequence Error
	StatusInvalidSGLSegment        Status = 0x0D // Invalid SGL Segment Descriptor
	StatusInvalidSGLCount          Status = 0x0E // Invalid Number of SGL Descriptors
	StatusDataSGLLengthInvalid     Status = 0x0F // Data SGL Length Invalid
	StatusMetadataSGLLengthInvalid Status = 0x10 // Metadata SGL Length Invalid
	StatusSGLTypeInvalid           Status = 0x11 // SGL Descriptor Type Invalid
	StatusInvalidCMBUse            Status = 0x12 // Invalid Use of Controller Memory Buffer
	StatusPRPOffsetInvalid         Status = 0x13 // PRP Offset Invalid
	StatusAtomicWriteUnitExceeded  Status = 0x14 // Atomic Write Unit Exceeded
	StatusOperationDenied          Status = 0x15 // Operation Denied
	StatusSGLOffsetInvalid         Status = 0x16 // SGL Offset Invalid
	StatusHostIDInconsistent       Status = 0x18 // Host Identifier Inconsistent Format
	StatusKeepAliveExpired         Status = 0x19 // Keep Alive Timer Expired
	StatusKeepAliveInvalid         Status = 0x1A // Keep Alive Timeout Invalid
	StatusAbortPreempt             Status = 0x1B // Command Aborted due to Preempt and Abort
	StatusSanitizeFailed           Status = 0x1C // Sanitize Failed
	StatusSanitizeInProgress       Status = 0x1D // Sanitize In Progress
	StatusSGLGranularityInvalid    Status = 0x1E // SGL Data Block Granularity Invalid
	StatusNSWriteProtected         Status = 0x20 // Namespace is Write Protected
	StatusCommandInterrupted       Status = 0x21 // Command Interrupted
	StatusTransientTransportError  Status = 0x22 // Transient Transport Error
	StatusLBAOutOfRange            Status = 0x80 // LBA Out of Range
	StatusCapacityExceeded         Status = 0x81 // Capacity Exceeded
	StatusNamespaceNotReady        Status = 0x82 // Namespace Not Ready
	StatusReservationConflict      Status = 0x83 // Reservation Conflict
	StatusFormatInProgress         Status = 0x84 // Format In Progress
)

// Command specific status (SCT 1, NVMe Base 1.4 Figure 129; NVMe-oF 1.1
// Figure 21 for the Fabrics codes). Codes from 0x80 up mean different
// things for different commands: String names them as the Fabrics
// commands do, since those are the ones a fabrics host and target meet;
// the NVM command set's meanings of 0x180-0x182 are the aliases
// StatusConflictingAttributes, StatusInvalidProtectionInfo and
// StatusWriteToReadOnly.
const (
	StatusInvalidCQ                 Status = 0x100 // Completion Queue Invalid
	StatusInvalidQueueID            Status = 0x101 // Invalid Queue Identifier
	StatusInvalidQueueSize          Status = 0x102 // Invalid Queue Size
	StatusAbortLimitExceeded        Status = 0x103 // Abort Command Limit Exceeded
	StatusAsyncEventLimitExceeded   Status = 0x105 // Asynchronous Event Request Limit Exceeded
	StatusInvalidFirmwareSlot       Status = 0x106 // Invalid Firmware Slot
	StatusInvalidFirmwareImage      Status = 0x107 // Invalid Firmware Image
	StatusInvalidInterruptVector    Status = 0x108 // Invalid Interrupt Vector
	StatusInvalidLogPage            Status = 0x109 // Invalid Log Page
	StatusInvalidFormat             Status = 0x10A // Invalid Format
	StatusInvalidQueueDeletion      Status = 0x10C // Invalid Queue Deletion
	StatusFeatureNotSaveable        Status = 0x10D // Feature Identifier Not Saveable
	StatusFeatureNotChangeable      Status = 0x10E // Feature Not Changeable
	StatusFeatureNotNSSpecific      Status = 0x10F // Feature Not Namespace Specific
	StatusNSInsufficientCapacity    Status = 0x115 // Namespace Insufficient Capacity
	StatusNSIDUnavailable           Status = 0x116 // Namespace Identifier Unavailable
	StatusNSAlreadyAttached         Status = 0x118 // Namespace Already Attached
	StatusNSIsPrivate               Status = 0x119 // Namespace Is Private
	StatusNSNotAttached             Status = 0x11A // Namespace Not Attached
	StatusControllerListInvalid     Status = 0x11C // Controller List Invalid
	StatusConnectIncompatibleFormat Status = 0x180 // Connect: Incompatible Format
	StatusConnectControllerBusy     Status = 0x181 // Connect: Controller Busy
	StatusConnectInvalidParameters  Status = 0x182 // Connect: Connect Invalid Parameters
	StatusConnectRestartDiscovery   Status = 0x183 // Connect: Connect Restart Discovery
	StatusConnectInvalidHost        Status = 0x184 // Connect: Connect Invalid Host
	StatusDiscoverRestart           Status = 0x190 // Discover Restart (NVMe 2.0)
	StatusAuthRequired              Status = 0x191 // Authentication Required (NVMe 2.0)

	StatusConflictingAttributes Status = 0x180 // NVM commands: Conflicting Attributes
	StatusInvalidProtectionInfo Status = 0x181 // NVM commands: Invalid Protection Information
	StatusWriteToReadOnly       Status = 0x182 // NVM commands: Attempted Write to Read Only Range
)

// Media and data integrity errors (SCT 2, NVMe Base 1.4 Figure 130).
const (
	StatusWriteFault           Status = 0x280 // Write Fault
	StatusUnrecoveredReadError Status = 0x281 // Unrecovered Read Error
	StatusGuardCheckError      Status = 0x282 // End-to-end Guard Check Error
	StatusAppTagCheckError     Status = 0x283 // End-to-end Application Tag Check Error
	StatusRefTagCheckError     Status = 0x284 // End-to-end Reference Tag Check Error
	StatusCompareFailure       Status = 0x285 // Compare Failure
	StatusAccessDenied         Status = 0x286 // Access Denied
	StatusDeallocatedBlock     Status = 0x287 // Deallocated or Unwritten Logical Block
)

// Path related status (SCT 3, NVMe Base 1.4 Figure 131).
const (
	StatusInternalPathError   Status = 0x300 // Internal Path Error
	StatusANAPersistentLoss   Status = 0x301 // Asymmetric Access Persistent Loss
	StatusANAInaccessible     Status = 0x302 // Asymmetric Access Inaccessible
	StatusANATransition       Status = 0x303 // Asymmetric Access Transition
	StatusControllerPathError Status = 0x360 // Controller Pathing Error
	StatusHostPathError       Status = 0x370 // Host Pathing Error
	StatusAbortedByHost       Status = 0x371 // Command Aborted By Host
)

var statusNames = map[Status]string{
	StatusSuccess: "Successful Completion", StatusInvalidOpcode: "Invalid Command Opcode",
	StatusInvalidField: "Invalid Field in Command", StatusCIDConflict: "Command ID Conflict",
	StatusDataTransferError: "Data Transfer Error",
	StatusPowerLoss:         "Commands Aborted due to Power Loss Notification",
	StatusInternalError:     "Internal Error", StatusAbortRequested: "Command Abort Requested",
	StatusAbortSQDeleted:           "Command Aborted due to SQ Deletion",
	StatusAbortFailedFused:         "Command Aborted due to Failed Fused Command",
	StatusAbortMissingFused:        "Command Aborted due to Missing Fused Command",
	StatusInvalidNamespace:         "Invalid Namespace or Format",
	StatusCommandSequenceError:     "Command Sequence Error",
	StatusInvalidSGLSegment:        "Invalid SGL Segment Descriptor",
	StatusInvalidSGLCount:          "Invalid Number of SGL Descriptors",
	StatusDataSGLLengthInvalid:     "Data SGL Length Invalid",
	StatusMetadataSGLLengthInvalid: "Metadata SGL Length Invalid",
	StatusSGLTypeInvalid:           "SGL Descriptor Type Invalid",
	StatusInvalidCMBUse:            "Invalid Use of Controller Memory Buffer",
	StatusPRPOffsetInvalid:         "PRP Offset Invalid",
	StatusAtomicWriteUnitExceeded:  "Atomic Write Unit Exceeded",
	StatusOperationDenied:          "Operation Denied", StatusSGLOffsetInvalid: "SGL Offset Invalid",
	StatusHostIDInconsistent: "Host Identifier Inconsistent Format",
	StatusKeepAliveExpired:   "Keep Alive Timer Expired",
	StatusKeepAliveInvalid:   "Keep Alive Timeout Invalid",
	StatusAbortPreempt:       "Command Aborted due to Preempt and Abort",
	StatusSanitizeFailed:     "Sanitize Failed", StatusSanitizeInProgress: "Sanitize In Progress",
	StatusSGLGranularityInvalid:   "SGL Data Block Granularity Invalid",
	StatusNSWriteProtected:        "Namespace is Write Protected",
	StatusCommandInterrupted:      "Command Interrupted",
	StatusTransientTransportError: "Transient Transport Error",
	StatusLBAOutOfRange:           "LBA Out of Range", StatusCapacityExceeded: "Capacity Exceeded",
	StatusNamespaceNotReady: "Namespace Not Ready", StatusReservationConflict: "Reservation Conflict",
	StatusFormatInProgress: "Format In Progress",

	StatusInvalidCQ: "Completion Queue Invalid", StatusInvalidQueueID: "Invalid Queue Identifier",
	StatusInvalidQueueSize: "Invalid Queue Size", StatusAbortLimitExceeded: "Abort Command Limit Exceeded",
	StatusAsyncEventLimitExceeded: "Asynchronous Event Request Limit Exceeded",
	StatusInvalidFirmwareSlot:     "Invalid Firmware Slot", StatusInvalidFirmwareImage: "Invalid Firmware Image",
	StatusInvalidInterruptVector: "Invalid Interrupt Vector", StatusInvalidLogPage: "Invalid Log Page",
	StatusInvalidFormat: "Invalid Format", StatusInvalidQueueDeletion: "Invalid Queue Deletion",
	StatusFeatureNotSaveable:     "Feature Identifier Not Saveable",
	StatusFeatureNotChangeable:   "Feature Not Changeable",
	StatusFeatureNotNSSpecific:   "Feature Not Namespace Specific",
	StatusNSInsufficientCapacity: "Namespace Insufficient Capacity",
	StatusNSIDUnavailable:        "Namespace Identifier Unavailable",
	StatusNSAlreadyAttached:      "Namespace Already Attached", StatusNSIsPrivate: "Namespace Is Private",
	StatusNSNotAttached: "Namespace Not Attached", StatusControllerListInvalid: "Controller List Invalid",
	StatusConnectIncompatibleFormat: "Incompatible Format",
	StatusConnectControllerBusy:     "Controller Busy",
	StatusConnectInvalidParameters:  "Connect Invalid Parameters",
	StatusConnectRestartDiscovery:   "Connect Restart Discovery",
	StatusConnectInvalidHost:        "Connect Invalid Host",
	StatusDiscoverRestart:           "Discover Restart", StatusAuthRequired: "Authentication Required",

	StatusWriteFault: "Write Fault", StatusUnrecoveredReadError: "Unrecovered Read Error",
	StatusGuardCheckError:  "End-to-end Guard Check Error",
	StatusAppTagCheckError: "End-to-end Application Tag Check Error",
	StatusRefTagCheckError: "End-to-end Reference Tag Check Error",
	StatusCompareFailure:   "Compare Failure", StatusAccessDenied: "Access Denied",
	StatusDeallocatedBlock: "Deallocated or Unwritten Logical Block",

	StatusInternalPathError:   "Internal Path Error",
	StatusANAPersistentLoss:   "Asymmetric Access Persistent Loss",
	StatusANAInaccessible:     "Asymmetric Access Inaccessible",
	StatusANATransition:       "Asymmetric Access Transition",
	StatusControllerPathError: "Controller Pathing Error", StatusHostPathError: "Host Pathing Error",
	StatusAbortedByHost: "Command Aborted By Host",
}

// MakeStatus returns the status of type sct (3 bits) and code sc.
func MakeStatus(sct, sc uint8) Status { return Status(sct&7)<<8 | Status(sc) }

// SC returns the Status Code.
func (s Status) SC() uint8 { return uint8(s) }

// SCT returns the Status Code Type.
func (s Status) SCT() uint8 { return uint8(s>>8) & 7 }

// CRD returns the Command Retry Delay field (0 to 3).
func (s Status) CRD() uint8 { return uint8(s>>11) & 3 }

// More reports the M bit.
func (s Status) More() bool { return s&StatusMore != 0 }

// DNR reports the Do Not Retry bit.
func (s Status) DNR() bool { return s&StatusDNR != 0 }

// Code returns SCT and SC alone, for comparison with the Status
// constants.
func (s Status) Code() Status { return s & statusCode }

// WithDNR returns s with Do Not Retry set.
func (s Status) WithDNR() Status { return s | StatusDNR }

// Success reports whether s is Successful Completion (whatever its other
// bits).
func (s Status) Success() bool { return s.Code() == StatusSuccess }

// Name returns the specification's name of the status code (SCT and SC),
// or "" for a code this package does not name.
func (s Status) Name() string { return statusNames[s.Code()] }

// String returns the name of the status code, or "SCT n SC 0xNN" for a
// code without one, followed by " (DNR)" and " (More)" when those bits
// are set.
func (s Status) String() string {
	n := s.Name()
	if n == "" {
		n = "SCT " + strconv.Itoa(int(s.SCT())) + " SC 0x" + hex2(s.SC())
	}
	if s.DNR() {
		n += " (DNR)"
	}
	if s.More() {
		n += " (More)"
	}
	return n
}
