package target

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// aerLimit is AERL: the controller holds up to aerLimit+1 Asynchronous
// Event Requests (NVMe Base 1.4 §5.2).
const aerLimit = 3

// kasUnit is the keep-alive granularity Identify Controller's KAS
// reports (KAS 1: 100 ms).
const kasUnit = 100 * time.Millisecond

// controller is one NVMe controller of the subsystem (the dynamic model:
// each admin Connect makes one, NVMe-oF 1.1 §3.2) or a discovery
// controller. Its admin queue's goroutine runs its admin commands; the
// goroutines of its I/O queues and its keep-alive timer share the state
// below mu.
type controller struct {
	t       *Target
	id      uint16
	disc    bool        // a discovery controller (NVMe-oF 1.1 §5)
	hostNQN string      // the host's NQN and ID from the admin Connect
	hostID  [16]byte    //
	admin   *queue      // the admin queue
	ready   atomic.Bool // CC.EN and CSTS.RDY; written under mu

	mu        sync.Mutex // guards the fields below
	cc        uint32
	csts      uint32
	kato      time.Duration     // 0: no keep-alive timeout
	stopTimer func() bool       // stops the timer firing expire after kato without a Keep Alive; nil: none
	katoGen   uint64            // counts re-arms: a timer that fired late for an old arming does nothing
	io        map[uint16]*queue // connected I/O queues by QID
	numQueues int               // I/O queues granted by Set Features, 0 until then
	feat      map[uint8]uint32  // plain features' current values
	gone      bool              // torn down: no new I/O queue

	vwc     atomic.Bool // volatile write cache enabled (read by the I/O queues)
	traffic atomic.Bool // an I/O queue took a command since the timer was last checked
}

// newController registers a controller for the admin queue q; nil when
// the Target is closed or has no free controller ID.
func (t *Target) newController(q *queue, disc bool, d *nvme.ConnectData, kato time.Duration) *controller {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || len(t.ctrls) >= 0xFFEF {
		return nil
	}
	id := t.nextID
	for t.ctrls[id] != nil || id == 0 || id > 0xFFEF { // CNTLIDs 1 to 0xFFEF (NVMe-oF 1.1 §3.2)
		id++
		if id == 0 || id > 0xFFEF {
			id = 1
		}
	}
	t.nextID = id + 1
	c := &controller{t: t, id: id, disc: disc, hostNQN: d.HOSTNQN, hostID: d.HOSTID, admin: q,
		io: map[uint16]*queue{}, feat: maps.Clone(plainFeatures)}
	c.vwc.Store(true)
	t.ctrls[id] = c
	c.setKATO(kato)
	return c
}

// plainFeatures are the defaults of the features that are only stored
// (their values change nothing in the target).
var plainFeatures = map[uint8]uint32{
	nvme.FeatArbitration:   0,
	nvme.FeatPowerMgmt:     0,
	nvme.FeatTempThreshold: 0x0157, // over 343 K (70 °C), composite sensor
	nvme.FeatErrorRecovery: 0,
	nvme.FeatWriteAtomic:   0,
	nvme.FeatAsyncEvent:    0,
}

// lookupController returns the live controller id for an I/O queue's
// Connect of host hostNQN; nil if there is none.
func (t *Target) lookupController(id uint16, hostNQN string) *controller {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.ctrls[id]
	if c == nil || c.hostNQN != hostNQN {
		return nil
	}
	return c
}

// teardown ends the controller when its admin queue ends: its I/O
// queues' connections are closed and its ID is free again.
func (c *controller) teardown() {
	c.t.mu.Lock()
	delete(c.t.ctrls, c.id)
	c.t.mu.Unlock()
	c.mu.Lock()
	c.gone = true
	c.katoGen++
	if c.stopTimer != nil {
		c.stopTimer()
	}
	qs := make([]*queue, 0, len(c.io))
	for _, q := range c.io {
		qs = append(qs, q)
	}
	c.mu.Unlock()
	c.ready.Store(false)
	for _, q := range qs {
		q.qp.Close()
	}
}

// addIOQueue records q as I/O queue qid. It fails with Command Sequence
// Error if qid is connected already, the controller is going away or is
// not ready (CC.EN, NVMe-oF 1.1 §3.3), and with Connect Invalid
// Parameters (badQID) if qid is more than the I/O queues allowed. The
// checks are made under mu, with the queue's recording: a reset or a
// Set Features (Number of Queues) cannot come between them.
func (c *controller) addIOQueue(qid uint16, q *queue) (st nvme.Status, badQID bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.gone || c.io[qid] != nil || !c.ready.Load():
		return nvme.StatusCommandSequenceError.WithDNR(), false
	case int(qid) > c.ioQueuesAllowedLocked():
		return nvme.StatusConnectInvalidParameters.WithDNR(), true
	}
	c.io[qid] = q
	return nvme.StatusSuccess, false
}

// removeIOQueue forgets I/O queue q when its connection ended.
func (c *controller) removeIOQueue(q *queue) {
	c.mu.Lock()
	if c.io[q.qid] == q {
		delete(c.io, q.qid)
	}
	c.mu.Unlock()
}

// ioQueuesAllowedLocked returns the I/O queues a Connect may name: those
// granted by Set Features (Number of Queues), or the target's maximum
// before the host asked; mu held.
func (c *controller) ioQueuesAllowedLocked() int {
	if c.numQueues > 0 {
		return c.numQueues
	}
	return c.t.s.maxIOQueues
}

// afterFunc is time.AfterFunc returning the timer's Stop: the only
// timer of the target (tests replace it through Target.afterFunc).
func afterFunc(d time.Duration, f func()) (stop func() bool) { return time.AfterFunc(d, f).Stop }

// setKATO sets the keep-alive timeout and (re)arms the timer; 0 disarms
// it. KATO is rounded up to the KAS granularity (NVMe Base 1.4 §7.12.1).
func (c *controller) setKATO(kato time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kato > 0 {
		kato = (kato + kasUnit - 1) / kasUnit * kasUnit
	}
	c.kato = kato
	c.armLocked()
}

// keepAlive restarts the keep-alive timer (Keep Alive command, NVMe Base
// 1.4 §5.25).
func (c *controller) keepAlive() {
	c.mu.Lock()
	c.armLocked()
	c.mu.Unlock()
}

// armLocked (re)starts the timer for c.kato; mu held.
func (c *controller) armLocked() {
	c.katoGen++
	if c.stopTimer != nil {
		c.stopTimer()
		c.stopTimer = nil
	}
	if c.kato <= 0 || c.gone {
		return
	}
	gen := c.katoGen
	c.stopTimer = c.t.afterFunc(c.kato, func() { c.expire(gen) })
}

// stopKeepAlive disarms the timer (Target.Close).
func (c *controller) stopKeepAlive() {
	c.mu.Lock()
	c.katoGen++
	if c.stopTimer != nil {
		c.stopTimer()
	}
	c.mu.Unlock()
}

// ioTraffic notes a command on one of the controller's I/O queues: the
// keep-alive timer's expiry then reschedules it instead.
func (c *controller) ioTraffic() {
	if !c.traffic.Load() { // the common case stores nothing
		c.traffic.Store(true)
	}
}

// expire tears the controller down: no Keep Alive arrived within KATO
// (NVMe Base 1.4 §7.12.1: the controller records Keep Alive Timer
// Expired, sets CSTS.CFS and stops processing commands; NVMe-oF 1.1
// §3.6: the association is torn down). The queues' connections are
// closed, which ends their goroutines. A controller whose I/O queues
// took commands since the last expiry is busy, not gone: the timer is
// rescheduled (traffic based keep alive, as Linux's target does).
func (c *controller) expire(gen uint64) {
	c.mu.Lock()
	if gen != c.katoGen || c.gone {
		c.mu.Unlock()
		return
	}
	if c.traffic.Swap(false) {
		c.armLocked()
		c.mu.Unlock()
		return
	}
	c.csts |= cstsCFS
	kato := c.kato
	c.mu.Unlock()
	c.ready.Store(false)
	c.t.log.Warn("nvmeof: keep-alive timeout expired: controller torn down", "cntlid", c.id, "kato", kato, "hostnqn", c.hostNQN)
	c.admin.qp.Close() // the admin queue's end tears the I/O queues down (teardown)
}
