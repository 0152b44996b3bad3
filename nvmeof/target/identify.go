package target

import (
	"time"

	"github.com/goiwarp/iwarp/internal/nvme"
	"github.com/goiwarp/iwarp/nvmeof"
)

// nsid is the namespace the target serves.
const nsid = 1

// firmwareRevision is Identify Controller's FR and firmware slot 1's.
const firmwareRevision = "1.0"

// identifyLength checks an Identify command (NVMe Base 1.4 §5.15): the
// CNS values a fabrics controller answers, and the NSID each needs.
func identifyLength(q *queue, c *command) (int, nvme.Status) {
	k := c.cmd.Identify()
	id := c.cmd.NSID
	if q.ctrl.disc && k.CNS != nvme.CNSController {
		return 0, nvme.StatusInvalidField.WithDNR()
	}
	switch k.CNS {
	case nvme.CNSController:
	case nvme.CNSNamespace, nvme.CNSNSDescList:
		if id != nsid {
			return 0, nvme.StatusInvalidNamespace.WithDNR()
		}
	case nvme.CNSActiveNSList:
		if id >= nvme.NSIDAll-1 {
			return 0, nvme.StatusInvalidNamespace.WithDNR()
		}
	case nvme.CNSCSController:
		if k.CSI != nvme.CSINVM {
			return 0, nvme.StatusInvalidField.WithDNR()
		}
	default:
		return 0, nvme.StatusInvalidField.WithDNR()
	}
	return nvme.IdentifyLen, nvme.StatusSuccess
}

// execIdentify writes the data structure the CNS names.
func execIdentify(q *queue, c *command) nvme.Status {
	k := c.cmd.Identify()
	b := c.out
	var err error
	switch k.CNS {
	case nvme.CNSController:
		id := q.t.identifyController(q.ctrl)
		err = id.Encode(b)
	case nvme.CNSNamespace:
		ns := q.t.identifyNamespace()
		err = ns.Encode(b)
	case nvme.CNSActiveNSList:
		err = nvme.EncodeNSList(b, []uint32{nsid}, c.cmd.NSID)
	case nvme.CNSNSDescList:
		err = nvme.EncodeNSDescList(b, []nvme.NSDescriptor{
			{NIDT: nvme.NIDTNGUID, NID: q.t.ids.nguid[:]},
			{NIDT: nvme.NIDTUUID, NID: q.t.ids.uuid[:]},
			{NIDT: nvme.NIDTCSI, NID: []byte{nvme.CSINVM}},
		})
	case nvme.CNSCSController:
		clear(b) // the NVM command set's: no limits beyond MDTS
	}
	if err != nil {
		return nvme.StatusInternalError
	}
	c.outLen = len(b)
	return nvme.StatusSuccess
}

// identifyController returns Identify Controller of ctrl (NVMe Base 1.4
// Figure 247; the fabrics fields, NVMe-oF 1.1 Figure 28), with what
// Linux's host checks: CNTLID as Connect returned it, KAS not zero,
// keyed SGLs in SGLS, ICDOFF 0, MAXCMD and IOCCSZ for its queues.
func (t *Target) identifyController(ctrl *controller) nvme.Controller {
	id := nvme.Controller{
		SN: t.s.serial, MN: t.s.model, FR: firmwareRevision, RAB: 6,
		MDTS: t.s.mdts, CNTLID: ctrl.id, VER: nvmeVersion,
		CTRATT: nvme.CTRATTHostID128, CNTRLTYPE: nvme.CtrlTypeIO,
		ACL: 3, AERL: aerLimit, FRMW: 1<<1 | 1, // one firmware slot, read-only
		LPA: nvme.LPACmdEffects | nvme.LPAExtended, ELPE: 0, KAS: uint16(kasUnit / (100 * time.Millisecond)),
		WCTEMP: 343, CCTEMP: 353,
		SQES: nvme.SQESNVM, CQES: nvme.CQESNVM, MAXCMD: uint16(t.s.queueDepth),
		NN: 1, MNAN: 1, ONCS: nvme.ONCSDSM | nvme.ONCSWriteZeroes, VWC: nvme.VWCPresent,
		SGLS:   nvme.SGLSSupported | nvme.SGLSKeyed,
		SUBNQN: t.s.nqn, IOCCSZ: uint32(nvme.SQELen+t.s.inline) / 16, IORCSZ: nvme.CQELen / 16,
		MSDBD: 1, CMIC: nvme.CMICMultiPort | nvme.CMICMultiCtrl, OAES: nvme.OAESNSAttr,
	}
	if t.s.inline > 0 {
		id.SGLS |= nvme.SGLSOffset
	}
	id.PSD[0] = nvme.PowerState{MP: 2500, ENLAT: 16, EXLAT: 4} // 25 W, as Linux's target
	if ctrl.disc {
		// NVMe-oF 1.1 §5: a discovery controller has no namespaces and
		// no I/O queues.
		id.CNTRLTYPE, id.SUBNQN, id.NN, id.MNAN, id.ONCS, id.VWC = nvme.CtrlTypeDiscovery, nvmeof.DiscoveryNQN, 0, 0, 0, 0
		id.CMIC, id.OAES, id.LPA, id.SQES, id.CQES = 0, 0, nvme.LPAExtended, 0, 0
		id.MAXCMD, id.IOCCSZ, id.IORCSZ = adminQueueDepth, 0, 0
	}
	return id
}

// identifyNamespace returns Identify Namespace of the namespace (NVMe
// Base 1.4 Figure 249): one LBA format, shared by the subsystem's
// controllers (NMIC), deallocated blocks reading as zeros (DLFEAT).
func (t *Target) identifyNamespace() nvme.Namespace {
	ns := nvme.Namespace{NSZE: t.s.blocks, NCAP: t.s.blocks, NUSE: t.s.blocks,
		NMIC: nvme.NMICShared, DLFEAT: nvme.DLFEATZeroes | nvme.DLFEATWZDeac, NGUID: t.ids.nguid}
	ns.LBAF[0].LBADS = 9
	if t.s.blockSize == 4096 {
		ns.LBAF[0].LBADS = 12
	}
	return ns
}
