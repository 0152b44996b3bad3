package target

import (
	"errors"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/nvme"
)

// RDMA_CM reject statuses the target gives (NVMe over Fabrics RDMA
// Transport 1.0 Figure 5).
const (
	cmNoResources = nvme.CMNoResources
)

// cmReject returns the private data of a connection rejected with sts.
func cmReject(sts nvme.CMStatus) []byte {
	b := make([]byte, nvme.CMRejectLen)
	r := nvme.CMReject{RECFMT: nvme.CMRECFMT, STS: sts}
	r.Encode(b) // never fails: b is CMRejectLen bytes
	return b
}

// checkCMRequest judges a queue's connection request (NVMe over Fabrics
// RDMA Transport 1.0 §3.3): the QID must be the admin queue's or one an
// I/O controller can grant; HSQSIZE+1 commands must fit the queue (32 for
// the admin queue, QueueDepth for an I/O queue); the host must be able to
// take a response for each (HRQSIZE at least HSQSIZE+1); with MPA
// revision 2 the host must let the target read its memory (IRD).
func (t *Target) checkCMRequest(req *iwarp.ConnRequest) (nvme.CMRequest, error) {
	r, err := nvme.DecodeCMRequest(req.PrivateData())
	if err != nil {
		return r, err
	}
	limit := t.s.queueDepth
	if r.QID == nvme.AdminQID {
		limit = adminQueueDepth
	}
	switch {
	case int(r.QID) > t.s.maxIOQueues:
		return r, nvme.CMInvalidQID
	case r.HSQSIZE == 0 || int(r.HSQSIZE)+1 > limit:
		return r, nvme.CMInvalidHSQSIZE
	case int(r.HRQSIZE) < int(r.HSQSIZE)+1:
		return r, nvme.CMInvalidHRQSIZE
	}
	if ird, _, ok := req.IRDORD(); ok && ird == 0 {
		return r, nvme.CMInvalidIRD
	}
	return r, nil
}

// serveConn sets a queue up for a connection request, accepts it and
// serves the queue until it ends.
func (t *Target) serveConn(req *iwarp.ConnRequest) {
	r, err := t.checkCMRequest(req)
	if err != nil {
		sts := nvme.CMInvalidLength
		errors.As(err, &sts)
		t.log.Warn("nvmeof: connection rejected", "peer", req.RemoteAddr(), "status", sts.String())
		req.Reject(cmReject(sts))
		return
	}
	capLen := nvme.SQELen
	if r.QID != nvme.AdminQID {
		capLen += t.s.inline
	}
	q, err := t.newQueue(r.QID, int(r.HSQSIZE)+1, capLen)
	if err != nil {
		t.log.Warn("nvmeof: connection rejected: no resources", "peer", req.RemoteAddr(), "err", err)
		req.Reject(cmReject(cmNoResources))
		return
	}
	if !t.addQueue(q) {
		req.Reject(cmReject(cmNoResources))
		q.release()
		return
	}
	defer t.removeQueue(q)
	defer q.release()
	reply := make([]byte, nvme.CMReplyLen)
	rep := nvme.CMReply{RECFMT: nvme.CMRECFMT, CRQSIZE: uint16(q.depth)}
	rep.Encode(reply) // never fails: reply is CMReplyLen bytes
	if err := req.Accept(t.ctx, q.qp, &iwarp.ConnOptions{PrivateData: reply, DisableCRC: t.s.noCRC}); err != nil {
		t.log.Warn("nvmeof: accepting a connection failed", "peer", req.RemoteAddr(), "qid", r.QID, "err", err)
		return
	}
	q.local = q.qp.Attributes().LocalAddr
	t.log.Debug("nvmeof: queue connected", "peer", req.RemoteAddr(), "qid", r.QID, "entries", q.depth)
	q.run(t.ctx)
	q.end()
}

// end leaves the queue's controller when the queue's connection is gone:
// an admin queue takes its controller (and so its I/O queues) with it.
func (q *queue) end() {
	q.qp.Close()
	if q.ctrl == nil {
		return
	}
	if q.qid == nvme.AdminQID {
		q.ctrl.teardown()
		q.t.log.Info("nvmeof: controller gone", "cntlid", q.ctrl.id, "hostnqn", q.ctrl.hostNQN, "err", q.qp.Err())
		return
	}
	q.ctrl.removeIOQueue(q)
	q.t.log.Debug("nvmeof: I/O queue gone", "cntlid", q.ctrl.id, "qid", q.qid, "err", q.qp.Err())
}
