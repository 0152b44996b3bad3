package target

import (
	"time"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// Features (NVMe Base 1.4 §5.21.1): none is saveable (Set Features with
// SV fails with Feature Identifier Not Saveable and Get Features' saved
// value is the default); the controller-wide ones below are changeable.
// A discovery controller has Keep Alive Timer and Asynchronous Event
// Configuration only (NVMe-oF 1.1 Figure 30).

// Bits of Get Features' answer with SEL 3 (supported capabilities).
const featChangeable = 1 << 2

// supportedAEC returns the events the Asynchronous Event Configuration
// may enable: SMART critical warnings and namespace attribute notices
// (OAES), or discovery log changes on a discovery controller.
func (c *controller) supportedAEC() uint32 {
	if c.disc {
		return nvme.AECDiscChange
	}
	return nvme.AECSMARTMask | nvme.AECNSAttr
}

// featureKnown reports whether the controller has feature fid.
func (c *controller) featureKnown(fid uint8) bool {
	switch fid {
	case nvme.FeatKeepAlive, nvme.FeatAsyncEvent:
		return true
	case nvme.FeatVolatileWC, nvme.FeatNumQueues, nvme.FeatHostID:
		return !c.disc
	}
	_, plain := plainFeatures[fid]
	return plain && !c.disc
}

// getFeaturesLength: Host Identifier returns its 16 bytes as data; the
// other features answer in DW0.
func getFeaturesLength(q *queue, c *command) (int, nvme.Status) {
	f := c.cmd.Feature()
	switch {
	case !q.ctrl.featureKnown(f.FID), f.SEL > nvme.FeatureSelSupported:
		return 0, nvme.StatusInvalidField.WithDNR()
	case f.FID == nvme.FeatHostID && f.SEL != nvme.FeatureSelSupported:
		if f.Value&1 == 0 { // EXHID: the host ID is 128 bits (CTRATT)
			return 0, nvme.StatusInvalidField.WithDNR()
		}
		return 16, nvme.StatusSuccess
	}
	return 0, nvme.StatusSuccess
}

// execGetFeatures answers Get Features (NVMe Base 1.4 §5.9).
func execGetFeatures(q *queue, c *command) nvme.Status {
	f := c.cmd.Feature()
	ctrl := q.ctrl
	if f.SEL == nvme.FeatureSelSupported {
		c.cqe.DW0 = featChangeable
		if f.FID == nvme.FeatHostID {
			c.cqe.DW0 = 0
		}
		return nvme.StatusSuccess
	}
	def := f.SEL != nvme.FeatureSelCurrent
	ctrl.mu.Lock()
	defer ctrl.mu.Unlock()
	switch f.FID {
	case nvme.FeatKeepAlive:
		if !def {
			c.cqe.DW0 = uint32(ctrl.kato / time.Millisecond)
		}
	case nvme.FeatVolatileWC:
		if def || ctrl.vwc.Load() {
			c.cqe.DW0 = nvme.VolatileWCEnable
		}
	case nvme.FeatNumQueues:
		n := ctrl.numQueues
		if def || n == 0 {
			n = q.t.s.maxIOQueues
		}
		c.cqe.DW0 = nvme.NumQueues{NSQ: uint16(n - 1), NCQ: uint16(n - 1)}.Uint32()
	case nvme.FeatHostID:
		copy(c.out, ctrl.hostID[:])
		c.outLen = 16
	case nvme.FeatTempThreshold:
		// The composite sensor's over-temperature threshold (TMPSEL 0,
		// THSEL 0) is kept; the others read as 0 (NVMe Base 1.4 §5.21.1.4).
		if f.Value>>16&0x3F == 0 {
			v := ctrl.feat[f.FID]
			if def {
				v = plainFeatures[f.FID]
			}
			c.cqe.DW0 = v & 0xFFFF
		}
	default:
		v := ctrl.feat[f.FID]
		if def {
			v = plainFeatures[f.FID]
		}
		c.cqe.DW0 = v
	}
	return nvme.StatusSuccess
}

// execSetFeatures answers Set Features (NVMe Base 1.4 §5.21).
func execSetFeatures(q *queue, c *command) nvme.Status {
	f := c.cmd.Feature()
	ctrl := q.ctrl
	switch {
	case !ctrl.featureKnown(f.FID):
		return nvme.StatusInvalidField.WithDNR()
	case f.SV:
		return nvme.StatusFeatureNotSaveable.WithDNR()
	case f.FID == nvme.FeatHostID:
		return nvme.StatusCommandSequenceError.WithDNR() // set by Connect on fabrics (NVMe-oF 1.1 §3.3)
	case f.FID == nvme.FeatKeepAlive:
		ctrl.setKATO(time.Duration(f.Value) * time.Millisecond)
		return nvme.StatusSuccess
	}
	ctrl.mu.Lock()
	defer ctrl.mu.Unlock()
	switch f.FID {
	case nvme.FeatVolatileWC:
		ctrl.vwc.Store(f.Value&nvme.VolatileWCEnable != 0)
	case nvme.FeatNumQueues:
		n := nvme.ParseNumQueues(f.Value)
		if n.NSQ == 0xFFFF || n.NCQ == 0xFFFF {
			return nvme.StatusInvalidField.WithDNR()
		}
		if len(ctrl.io) > 0 {
			return nvme.StatusCommandSequenceError.WithDNR() // I/O queues exist (NVMe Base 1.4 §5.21.1.7)
		}
		ctrl.numQueues = min(int(n.NSQ)+1, int(n.NCQ)+1, q.t.s.maxIOQueues)
		g := uint16(ctrl.numQueues - 1)
		c.cqe.DW0 = nvme.NumQueues{NSQ: g, NCQ: g}.Uint32()
	case nvme.FeatAsyncEvent:
		ctrl.feat[f.FID] = f.Value & ctrl.supportedAEC()
	case nvme.FeatPowerMgmt:
		if f.Value&0x1F != 0 { // PS: only power state 0 (NPSS 0)
			return nvme.StatusInvalidField.WithDNR()
		}
		ctrl.feat[f.FID] = f.Value & 0xFF
	case nvme.FeatTempThreshold:
		if f.Value>>16&0x3F == 0 { // the composite sensor's over-temperature threshold
			ctrl.feat[f.FID] = f.Value & 0xFFFF
		}
	default:
		ctrl.feat[f.FID] = f.Value
	}
	return nvme.StatusSuccess
}
