package target

import (
	"github.com/goiwarp/iwarp/internal/nvme"
)

// The admin commands of an I/O controller (NVMe Base 1.4 §5; NVMe-oF 1.1
// Figure 8 lists those a fabrics controller has) and of a discovery
// controller (NVMe-oF 1.1 §5, Figure 30). Others are Invalid Command
// Opcode.
var (
	adminHandlers = map[uint8]*handler{
		nvme.AdminIdentify:    {length: identifyLength, exec: execIdentify},
		nvme.AdminGetLogPage:  {length: logPageLength, exec: execGetLogPage},
		nvme.AdminGetFeatures: {length: getFeaturesLength, exec: execGetFeatures},
		nvme.AdminSetFeatures: {exec: execSetFeatures},
		nvme.AdminKeepAlive:   {exec: execKeepAlive},
		nvme.AdminAsyncEvent:  {exec: execAsyncEvent},
		nvme.AdminAbort:       {exec: execAbort},
	}
	discoveryHandlers = map[uint8]*handler{
		nvme.AdminIdentify:    adminHandlers[nvme.AdminIdentify],
		nvme.AdminGetLogPage:  adminHandlers[nvme.AdminGetLogPage],
		nvme.AdminGetFeatures: adminHandlers[nvme.AdminGetFeatures],
		nvme.AdminSetFeatures: adminHandlers[nvme.AdminSetFeatures],
		nvme.AdminKeepAlive:   adminHandlers[nvme.AdminKeepAlive],
		nvme.AdminAsyncEvent:  adminHandlers[nvme.AdminAsyncEvent],
	}
)

// lookup returns the handler of a command, or the status it fails with
// before its data is looked at: before Connect only Connect runs
// (NVMe-oF 1.1 §3.3, Command Sequence Error); Property Get and Set run
// on the admin queue only; other commands need the controller enabled
// and ready (CC.EN and CSTS.RDY, NVMe Base 1.4 §7.6.1).
func (q *queue) lookup(cmd *nvme.Command) (*handler, nvme.Status) {
	if cmd.Opcode == nvme.AdminFabrics {
		t := cmd.FCType()
		h := fabricsHandlers[t]
		switch {
		case h == nil, t != nvme.FCTypeConnect && q.qid != nvme.AdminQID:
			return nil, nvme.StatusInvalidOpcode.WithDNR()
		case t != nvme.FCTypeConnect && q.ctrl == nil:
			return nil, nvme.StatusCommandSequenceError.WithDNR()
		}
		return h, nvme.StatusSuccess
	}
	if q.ctrl == nil {
		return nil, nvme.StatusCommandSequenceError.WithDNR()
	}
	table := ioHandlers
	if q.qid == nvme.AdminQID {
		table = adminHandlers
		if q.ctrl.disc {
			table = discoveryHandlers
		}
	}
	h := table[cmd.Opcode]
	switch {
	case h == nil:
		return nil, nvme.StatusInvalidOpcode.WithDNR()
	case !q.ctrl.ready.Load():
		return nil, nvme.StatusCommandSequenceError.WithDNR()
	}
	return h, nvme.StatusSuccess
}

// execKeepAlive answers Keep Alive (NVMe Base 1.4 §5.25); onCapsule
// restarted the timer.
func execKeepAlive(q *queue, c *command) nvme.Status { return nvme.StatusSuccess }

// execAsyncEvent holds an Asynchronous Event Request until an event
// (NVMe Base 1.4 §5.2). The target has no event to report (its one
// namespace never changes): requests stay outstanding until the
// controller is reset or shut down, which completes them with Command
// Aborted due to SQ Deletion, or until the admin queue goes away.
func execAsyncEvent(q *queue, c *command) nvme.Status {
	if len(q.aers) > aerLimit {
		return nvme.StatusAsyncEventLimitExceeded.WithDNR()
	}
	q.aers = append(q.aers, c)
	return statusHold
}

// abortAERs completes the held Asynchronous Event Requests.
func (q *queue) abortAERs() {
	aers := q.aers
	q.aers = nil
	for _, c := range aers {
		q.respond(c, nvme.StatusAbortSQDeleted)
	}
}

// execAbort answers Abort (NVMe Base 1.4 §5.1): commands run to their end
// here, so none is ever aborted (DW0 bit 0 set).
func execAbort(q *queue, c *command) nvme.Status {
	c.cqe.DW0 = nvme.AbortNotAborted
	return nvme.StatusSuccess
}
