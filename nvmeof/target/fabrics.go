package target

import (
	"time"

	"github.com/goiwarp/iwarp/internal/nvme"
	"github.com/goiwarp/iwarp/nvmeof"
)

// The Fabrics commands (NVMe-oF 1.1 §3): Connect on any queue, Property
// Get and Set on the admin queue.
var fabricsHandlers = map[uint8]*handler{
	nvme.FCTypeConnect:     {length: connectLength, exec: execConnect},
	nvme.FCTypePropertyGet: {exec: execPropertyGet},
	nvme.FCTypePropertySet: {exec: execPropertySet},
}

// invalidParam completes a Connect with Connect Invalid Parameters,
// naming the offending field (NVMe-oF 1.1 Figure 21).
func invalidParam(c *command, off uint16, inData bool) nvme.Status {
	c.cqe.DW0 = nvme.InvalidParam{IPO: off, InData: inData}.DW0()
	return nvme.StatusConnectInvalidParameters.WithDNR()
}

// connectLength checks a Connect's command fields (NVMe-oF 1.1 §3.3)
// before its data is fetched.
func connectLength(q *queue, c *command) (int, nvme.Status) {
	k := c.cmd.Connect()
	switch {
	case q.ctrl != nil:
		return 0, nvme.StatusCommandSequenceError.WithDNR() // the queue is connected already
	case k.RECFMT != nvme.ConnectRECFMT:
		return 0, nvme.StatusConnectIncompatibleFormat.WithDNR()
	case k.QID != q.qid:
		return 0, invalidParam(c, nvme.ConnectOffQID, false) // not the queue the connection was made for
	case k.SQSIZE == 0, int(k.SQSIZE)+1 > q.depth, // more entries than the receives posted
		k.QID == nvme.AdminQID && int(k.SQSIZE)+1 < adminQueueDepth,
		k.QID != nvme.AdminQID && int(k.SQSIZE)+1 > q.t.s.queueDepth:
		return 0, invalidParam(c, nvme.ConnectOffSQSIZE, false)
	}
	return nvme.ConnectDataLen, nvme.StatusSuccess
}

// execConnect binds the queue to a controller: a new one for the admin
// queue (the dynamic controller model, CNTLID 0xFFFF), the one the data
// names for an I/O queue. connectLength's check that the queue is not
// connected yet is made again: another Connect may have run while this
// one's data was being fetched.
func execConnect(q *queue, c *command) nvme.Status {
	if q.ctrl != nil {
		return nvme.StatusCommandSequenceError.WithDNR()
	}
	k := c.cmd.Connect()
	d, err := nvme.DecodeConnectData(c.in)
	switch {
	case err != nil && len(d.SUBNQN) >= nvme.NQNFieldLen:
		return invalidParam(c, nvme.ConnectDataOffSUBNQN, true)
	case err != nil:
		return invalidParam(c, nvme.ConnectDataOffHOSTNQN, true)
	case d.SUBNQN != q.t.s.nqn && d.SUBNQN != nvmeof.DiscoveryNQN:
		return invalidParam(c, nvme.ConnectDataOffSUBNQN, true)
	case !nvme.CheckNQN(d.HOSTNQN):
		return invalidParam(c, nvme.ConnectDataOffHOSTNQN, true)
	}
	disc := d.SUBNQN == nvmeof.DiscoveryNQN
	if k.QID == nvme.AdminQID {
		if d.CNTLID != nvme.CNTLIDDynamic {
			return invalidParam(c, nvme.ConnectDataOffCNTLID, true)
		}
		ctrl := q.t.newController(q, disc, &d, time.Duration(k.KATO)*time.Millisecond)
		if ctrl == nil {
			return nvme.StatusConnectControllerBusy
		}
		q.ctrl = ctrl
		q.t.log.Info("nvmeof: controller connected", "cntlid", ctrl.id, "subnqn", d.SUBNQN,
			"hostnqn", d.HOSTNQN, "kato", ctrl.kato, "peer", q.qp.Attributes().PeerAddr)
	} else {
		ctrl := q.t.lookupController(d.CNTLID, d.HOSTNQN)
		if ctrl == nil || ctrl.disc || disc {
			return invalidParam(c, nvme.ConnectDataOffCNTLID, true)
		}
		if st, badQID := ctrl.addIOQueue(k.QID, q); badQID {
			return invalidParam(c, nvme.ConnectOffQID, false)
		} else if !st.Success() {
			return st
		}
		q.ctrl = ctrl
		ctrl.ioTraffic() // a host connecting its I/O queues is busy, if silent on the admin queue
		q.t.log.Debug("nvmeof: I/O queue connected", "cntlid", ctrl.id, "qid", k.QID, "entries", int(k.SQSIZE)+1)
	}
	q.sqsize = int(k.SQSIZE) + 1
	q.noSQHD = k.CATTR&nvme.CATTRSQFlowDisable != 0
	c.cqe.DW0 = nvme.ConnectResponse{CNTLID: q.ctrl.id}.DW0()
	return nvme.StatusSuccess
}

// Bits of CSTS and CC the target sets or reads.
const (
	cstsRDY = 1 << 0
	cstsCFS = 1 << 1
	ccEN    = 1 << 0
)

// execPropertyGet reads CAP, VS, CC or CSTS (NVMe-oF 1.1 §3.5).
func execPropertyGet(q *queue, c *command) nvme.Status {
	p := c.cmd.Property()
	if p.Size() == 0 || p.Size() != nvme.PropertySizeOf(p.OFST) {
		return nvme.StatusInvalidField.WithDNR()
	}
	ctrl := q.ctrl
	var v uint64
	switch p.OFST {
	case nvme.PropCAP:
		v = q.t.capability(ctrl.disc).Uint64()
	case nvme.PropVS:
		v = uint64(nvmeVersion)
	case nvme.PropCC:
		ctrl.mu.Lock()
		v = uint64(ctrl.cc)
		ctrl.mu.Unlock()
	case nvme.PropCSTS:
		ctrl.mu.Lock()
		v = uint64(ctrl.csts)
		ctrl.mu.Unlock()
	default:
		return nvme.StatusInvalidField.WithDNR()
	}
	c.cqe.SetResult(v)
	return nvme.StatusSuccess
}

// nvmeVersion is the version of the NVMe specification the controllers
// report (VS and Identify's VER).
const nvmeVersion = nvme.Version1_3

// capability returns CAP (NVMe Base 1.4 §3.1.1): MQES from QueueDepth,
// contiguous queues required, CSTS.RDY within 7.5 s, the NVM command
// set, 4 KiB pages only.
func (t *Target) capability(disc bool) nvme.CAP {
	mqes := uint16(t.s.queueDepth - 1)
	if disc {
		mqes = adminQueueDepth - 1
	}
	return nvme.CAP{MQES: mqes, CQR: true, TO: 15, CSS: nvme.CSSNVM}
}

// execPropertySet writes CC, the only property a host may set here
// (NVMe-oF 1.1 Figure 4; NSSR needs CAP.NSSRS, which is 0).
func execPropertySet(q *queue, c *command) nvme.Status {
	p := c.cmd.Property()
	if p.Size() != 4 || p.OFST != nvme.PropCC {
		return nvme.StatusInvalidField.WithDNR()
	}
	flush, abort := q.ctrl.setCC(uint32(p.VALUE))
	if abort {
		q.abortAERs()
	}
	if flush {
		if err := q.t.s.backend.Flush(); err != nil {
			q.t.log.Warn("nvmeof: flush at shutdown", "err", err)
		}
	}
	return nvme.StatusSuccess
}

// setCC writes CC and moves the controller as NVMe Base 1.4 §3.1.5 and
// §7.6 say: EN 0 to 1 makes it ready if the configuration is one it
// supports (else CSTS.CFS); EN 1 to 0 resets it (its I/O queues are
// deleted: their connections closed, NVMe-oF 1.1 §3.4); a shutdown
// notification completes at once (flush says the backend must be
// flushed). abort says the held Asynchronous Event Requests end.
func (c *controller) setCC(v uint32) (flush, abort bool) {
	c.mu.Lock()
	old := nvme.ParseCC(c.cc)
	cc := nvme.ParseCC(v)
	c.cc = v
	var closeIO []*queue
	switch {
	case cc.EN && !old.EN:
		if c.csts&cstsCFS == 0 && c.configOK(cc) {
			c.csts |= cstsRDY
		} else {
			c.csts |= cstsCFS
		}
	case !cc.EN && old.EN:
		c.csts = 0
		c.numQueues = 0
		for _, q := range c.io {
			closeIO = append(closeIO, q)
		}
		abort = true
	}
	if cc.SHN != nvme.SHNNone && old.SHN == nvme.SHNNone {
		c.csts = c.csts&^(3<<2) | uint32(nvme.SHSTComplete)<<2
		flush, abort = true, true
	}
	if cc.SHN == nvme.SHNNone && old.SHN != nvme.SHNNone {
		c.csts &^= 3 << 2
	}
	cs := nvme.ParseCSTS(c.csts)
	c.ready.Store(cc.EN && cs.RDY && !cs.CFS && cc.SHN == nvme.SHNNone)
	c.mu.Unlock()
	for _, q := range closeIO {
		q.qp.Close()
	}
	return flush, abort
}

// configOK reports whether the controller supports the configuration of
// cc (NVMe Base 1.4 Figure 82): the NVM command set, 4 KiB pages, round
// robin arbitration and, for an I/O controller, 64- and 16-byte queue
// entries. A discovery controller accepts any entry sizes, as Linux's
// target does for hosts that leave them zero.
func (c *controller) configOK(cc nvme.CC) bool {
	if cc.CSS != 0 || cc.MPS != 0 || cc.AMS != 0 {
		return false
	}
	return c.disc || cc.IOSQES == 6 && cc.IOCQES == 4
}
