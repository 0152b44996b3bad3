package nvmeof

import (
	"fmt"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// StatusError is an NVMe command completed with a status other than
// Successful Completion (NVMe Base 1.4 §4.6.1): the host returns it for
// such a completion. Compare with the Err sentinels through errors.Is,
// which looks at SCT and SC only.
type StatusError struct {
	SCT  uint8 // Status Code Type: 0 generic, 1 command specific, 2 media, 3 path
	SC   uint8 // Status Code
	CRD  uint8 // Command Retry Delay, 0 to 3
	More bool  // more information in the Error Information log page
	DNR  bool  // Do Not Retry: the command is expected to fail again

	// Where the command came from, when known: its opcode, and the queue
	// it was sent on (0 the admin queue). Fabrics is set for a Fabrics
	// command, whose Opcode is 0x7F and FCType its type.
	Opcode  uint8
	FCType  uint8
	Fabrics bool
	QID     uint16
}

// NewStatusError returns the error of a completion whose Status Field,
// phase tag removed, is sf: SC in bits 7:0, SCT in bits 10:8, CRD in
// bits 12:11, More in bit 13, DNR in bit 14. It returns nil when the
// status is Successful Completion.
func NewStatusError(sf uint16) *StatusError {
	s := nvme.Status(sf)
	if s.Success() {
		return nil
	}
	return &StatusError{SCT: s.SCT(), SC: s.SC(), CRD: s.CRD(), More: s.More(), DNR: s.DNR()}
}

// StatusField returns e's Status Field without the phase tag, as
// NewStatusError takes it.
func (e *StatusError) StatusField() uint16 {
	s := nvme.MakeStatus(e.SCT, e.SC) | nvme.Status(e.CRD&3)<<11
	if e.More {
		s |= nvme.StatusMore
	}
	if e.DNR {
		s |= nvme.StatusDNR
	}
	return uint16(s)
}

// Name returns the specification's name of the status ("LBA Out of
// Range"), or "" for a code without one. Command-specific codes from
// 0x80 up are named as the Fabrics commands use them.
func (e *StatusError) Name() string { return nvme.MakeStatus(e.SCT, e.SC).Name() }

// Error returns, e.g., "nvmeof: LBA Out of Range (SCT 0, SC 0x80)".
func (e *StatusError) Error() string {
	n := e.Name()
	if n == "" {
		n = "status"
	}
	s := fmt.Sprintf("nvmeof: %s (SCT %d, SC %#02x", n, e.SCT, e.SC)
	if e.DNR {
		s += ", DNR"
	}
	return s + ")"
}

// Is reports whether target is a *StatusError of the same SCT and SC,
// so that errors.Is(err, ErrLBAOutOfRange) holds whatever the DNR, More
// and CRD bits and the command.
func (e *StatusError) Is(target error) bool {
	t, ok := target.(*StatusError)
	return ok && t != nil && e != nil && t.SCT == e.SCT && t.SC == e.SC
}

// Temporary reports whether retrying the command may succeed: DNR clear.
func (e *StatusError) Temporary() bool { return !e.DNR }

func sentinel(s nvme.Status) *StatusError {
	return &StatusError{SCT: s.SCT(), SC: s.SC()}
}

// Sentinel statuses for errors.Is. Only SCT and SC are compared.
var (
	ErrInvalidOpcode           = sentinel(nvme.StatusInvalidOpcode)
	ErrInvalidField            = sentinel(nvme.StatusInvalidField)
	ErrCIDConflict             = sentinel(nvme.StatusCIDConflict)
	ErrDataTransfer            = sentinel(nvme.StatusDataTransferError)
	ErrInternal                = sentinel(nvme.StatusInternalError)
	ErrAbortRequested          = sentinel(nvme.StatusAbortRequested)
	ErrAbortSQDeleted          = sentinel(nvme.StatusAbortSQDeleted)
	ErrInvalidNamespace        = sentinel(nvme.StatusInvalidNamespace)
	ErrCommandSequence         = sentinel(nvme.StatusCommandSequenceError)
	ErrSGLTypeInvalid          = sentinel(nvme.StatusSGLTypeInvalid)
	ErrDataSGLLength           = sentinel(nvme.StatusDataSGLLengthInvalid)
	ErrSGLOffsetInvalid        = sentinel(nvme.StatusSGLOffsetInvalid)
	ErrKeepAliveExpired        = sentinel(nvme.StatusKeepAliveExpired)
	ErrTransientTransport      = sentinel(nvme.StatusTransientTransportError)
	ErrLBAOutOfRange           = sentinel(nvme.StatusLBAOutOfRange)
	ErrCapacityExceeded        = sentinel(nvme.StatusCapacityExceeded)
	ErrNamespaceNotReady       = sentinel(nvme.StatusNamespaceNotReady)
	ErrNSWriteProtected        = sentinel(nvme.StatusNSWriteProtected)
	ErrInvalidQueueID          = sentinel(nvme.StatusInvalidQueueID)
	ErrInvalidQueueSize        = sentinel(nvme.StatusInvalidQueueSize)
	ErrInvalidLogPage          = sentinel(nvme.StatusInvalidLogPage)
	ErrFeatureNotChangeable    = sentinel(nvme.StatusFeatureNotChangeable)
	ErrIncompatibleFormat      = sentinel(nvme.StatusConnectIncompatibleFormat)
	ErrControllerBusy          = sentinel(nvme.StatusConnectControllerBusy)
	ErrConnectInvalidParam     = sentinel(nvme.StatusConnectInvalidParameters)
	ErrConnectRestartDiscovery = sentinel(nvme.StatusConnectRestartDiscovery)
	ErrConnectInvalidHost      = sentinel(nvme.StatusConnectInvalidHost)
	ErrWriteFault              = sentinel(nvme.StatusWriteFault)
	ErrUnrecoveredReadError    = sentinel(nvme.StatusUnrecoveredReadError)
	ErrAccessDenied            = sentinel(nvme.StatusAccessDenied)
	ErrANAInaccessible         = sentinel(nvme.StatusANAInaccessible)
	ErrANATransition           = sentinel(nvme.StatusANATransition)
	ErrCommandAbortedByHost    = sentinel(nvme.StatusAbortedByHost)
)
