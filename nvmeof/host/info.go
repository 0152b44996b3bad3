package host

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
)

// identifyLen is the size of every Identify data structure.
const identifyLen = 4096

// ControllerInfo is what a controller reported about itself (Identify
// Controller, NVMe Base §5.17.2.1, and its properties) and what the
// association uses.
type ControllerInfo struct {
	// ControllerID is the CNTLID the admin Connect returned.
	ControllerID uint16
	// VendorID is the PCI vendor ID (VID).
	VendorID uint16
	// SerialNumber, ModelNumber and FirmwareRevision are SN, MN and FR,
	// without their padding.
	SerialNumber, ModelNumber, FirmwareRevision string
	// SubsystemNQN is SUBNQN.
	SubsystemNQN string
	// Version is the NVMe version the controller implements (VS):
	// "major.minor" or "major.minor.tertiary".
	Version string
	// Namespaces is NN, the largest namespace ID.
	Namespaces uint32
	// MaxDataTransfer is MDTS in bytes (0: no limit).
	MaxDataTransfer int
	// MaxCommands is MAXCMD, the most commands outstanding per queue
	// (0: not reported).
	MaxCommands int
	// SGLSupport is the SGLS field: bit 2 keyed SGL data blocks, bit 20
	// offsets in in-capsule data.
	SGLSupport uint32
	// InCapsuleData is the most write data an I/O command capsule may
	// carry (IOCCSZ less the SQE), 0 without SGLS bit 20; the host sends
	// writes that fit in the capsule.
	InCapsuleData int
	// KeepAliveGranularity is KAS (0: keep-alive not supported).
	KeepAliveGranularity time.Duration
	// VolatileWriteCache is VWC bit 0: Flush matters.
	VolatileWriteCache bool
	// WriteZeroes is ONCS bit 3: the Write Zeroes command is supported.
	WriteZeroes bool
	// Discovery reports a discovery controller (CNTRLTYPE 2, or a
	// subsystem connected as the discovery NQN).
	Discovery bool
	// IOQueues and QueueSize are the I/O queues connected and the entries
	// of each (0 for a discovery controller).
	IOQueues, QueueSize int

	icdoff int // ICDOFF: where in-capsule data starts, in 16-byte units
}

// parse fills the fields of Identify Controller data b.
func (in *ControllerInfo) parse(b []byte, regs registers) {
	le := binary.LittleEndian
	in.VendorID = le.Uint16(b[0:])
	in.SerialNumber = ascii(b[4:24])
	in.ModelNumber = ascii(b[24:64])
	in.FirmwareRevision = ascii(b[64:72])
	if mdts := b[77]; mdts > 0 && mdts < 20 {
		in.MaxDataTransfer = 4096 << mdts
	}
	in.Discovery = in.Discovery || b[111] == 2
	in.KeepAliveGranularity = time.Duration(le.Uint16(b[320:])) * 100 * time.Millisecond
	in.MaxCommands = int(le.Uint16(b[514:]))
	in.Namespaces = le.Uint32(b[516:])
	in.WriteZeroes = le.Uint16(b[520:])&(1<<3) != 0
	in.VolatileWriteCache = b[525]&1 != 0
	in.SGLSupport = le.Uint32(b[536:])
	in.SubsystemNQN = nulTerminated(b[768:1024])
	if ioccsz := int(le.Uint32(b[1792:])) * 16; in.SGLSupport&(1<<20) != 0 && ioccsz > sqeLen {
		in.InCapsuleData = ioccsz - sqeLen
	}
	in.icdoff = int(le.Uint16(b[1800:]))
	vs := regs.vs
	in.Version = fmt.Sprintf("%d.%d", vs>>16, vs>>8&0xFF)
	if t := vs & 0xFF; t != 0 {
		in.Version += fmt.Sprintf(".%d", t)
	}
}

// ascii returns an ASCII field without its space padding (and anything
// after a NUL).
func ascii(b []byte) string {
	return string(bytes.TrimRight(bytes.TrimRight([]byte(nulTerminated(b)), " "), "\x00"))
}

// nulTerminated returns b up to its first NUL.
func nulTerminated(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
