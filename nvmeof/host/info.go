package host

import (
	"time"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// ControllerInfo is what a controller reported about itself (Identify
// Controller, NVMe Base §5.15.2.1, and its properties) and what the
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

// fill sets the fields Identify Controller data id and the properties give.
func (in *ControllerInfo) fill(id *nvme.Controller, regs registers) {
	in.VendorID = id.VID
	in.SerialNumber, in.ModelNumber, in.FirmwareRevision = id.SN, id.MN, id.FR
	in.MaxDataTransfer = int(min(id.MaxTransfer(regs.cap.MPSMIN), 1<<30))
	in.Discovery = in.Discovery || id.CNTRLTYPE == nvme.CtrlTypeDiscovery
	in.KeepAliveGranularity = time.Duration(id.KAS) * 100 * time.Millisecond
	in.MaxCommands = int(id.MAXCMD)
	in.Namespaces = id.NN
	in.WriteZeroes = id.ONCS&(1<<3) != 0
	in.VolatileWriteCache = id.VWC&1 != 0
	in.SGLSupport = id.SGLS
	in.SubsystemNQN = id.SUBNQN
	if ioccsz := int(id.IOCCSZ) * 16; id.SGLS&(1<<20) != 0 && ioccsz > sqeLen {
		in.InCapsuleData = ioccsz - sqeLen
	}
	in.icdoff = int(id.ICDOFF)
	in.Version = regs.vs.String()
}

// Info returns what the controller reported about itself and what the
// association uses.
func (c *Controller) Info() ControllerInfo { return c.info }
