package target

import (
	"context"
	"fmt"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/nvme"
)

// queue is one NVMe queue: a submission and completion queue pair carried
// by one iWARP connection (NVMe-oF 1.1 §2.3, NVMe over Fabrics RDMA
// Transport 1.0 §3). Command capsules arrive as Sends into the receives
// it keeps posted; each response capsule is a Send, preceded by the RDMA
// Write of a read's data; a write's data is fetched with an RDMA Read or
// comes in the capsule.
//
// Ownership: the goroutine running serveConn, then run, owns every field
// after creation; other goroutines only call qp.Close (Close, keep-alive
// expiry, the controller's teardown), which makes run return.
type queue struct {
	t      *Target
	qp     *iwarp.QP
	cq     *iwarp.CQ
	qid    uint16 // from the connection request; Connect must name the same
	depth  int    // receives posted: HSQSIZE+1 capsules
	capLen int    // the size of each receive: a command and its in-capsule data
	recv   *iwarp.MR
	rsp    *iwarp.MR // a response capsule per command context
	local  string    // the connection's local address (the discovery log's)

	cmds     []*command // contexts made so far, at most maxCmds
	free     []*command // contexts not in use
	maxCmds  int
	consumed uint32 // commands taken from the submission queue, for SQHD
	dead     bool   // the queue is being torn down: run returns
	sgl      [1]iwarp.SGE
	ranges   []nvme.DSMRange // Dataset Management's, reused
	comps    [32]iwarp.Completion

	// Set by Connect.
	ctrl   *controller
	sqsize int  // the submission queue's entries (SQSIZE+1)
	noSQHD bool // SQ flow control disabled (CATTR): SQHD is 0xFFFF
	aers   []*command
}

// command is the context of one command, from its capsule to the
// completion of its response's Send. Owned by its queue's goroutine.
type command struct {
	idx    int
	cmd    nvme.Command
	cqe    nvme.Completion
	h      *handler
	buf    *iwarp.MR          // data buffer (RDMA Read sink, RDMA Write source); nil until needed
	in     []byte             // host-to-controller data, in the capsule or in buf
	out    []byte             // room for controller-to-host data (buf's first bytes)
	outLen int                // bytes of out the response transfers
	remote iwarp.RemoteBuffer // the host's buffer a keyed SGL names
	inv    uint32             // STag the response's Send invalidates, or 0
	busy   bool
}

// Work request IDs: receives are numbered by receive buffer; send work
// requests by command context.

// newQueue makes the QP and buffers of a queue for depth commands of
// capLen bytes and posts the receives.
func (t *Target) newQueue(qid uint16, depth, capLen int) (*queue, error) {
	q := &queue{t: t, qid: qid, depth: depth, capLen: capLen, maxCmds: 3*depth + aerLimit + 1}
	sendDepth := 2 * q.maxCmds // at most an RDMA Read or Write and a Send per command
	var err error
	if q.cq, err = t.dev.NewCQ(sendDepth+depth, nil); err != nil {
		return nil, err
	}
	if q.qp, err = t.pd.NewQP(&iwarp.QPConfig{SendCQ: q.cq, RecvCQ: q.cq, SendQueueDepth: sendDepth,
		RecvQueueDepth: depth, MaxSGE: 1}); err != nil {
		q.cq.Close()
		return nil, err
	}
	if q.recv, err = t.pd.RegisterMemory(make([]byte, depth*capLen), iwarp.AccessLocalWrite); err == nil {
		q.rsp, err = t.pd.RegisterMemory(make([]byte, q.maxCmds*nvme.CQELen), 0)
	}
	if err == nil {
		for i := range depth {
			if err = q.postRecv(i); err != nil {
				break
			}
		}
	}
	if err != nil {
		q.release()
		return nil, err
	}
	return q, nil
}

// release closes the QP and frees the queue's memory: after run, or when
// the connection was never established.
func (q *queue) release() {
	q.qp.Close() // returns once every work request completed or was flushed
	for _, c := range q.cmds {
		if c.buf != nil {
			c.buf.Close()
		}
	}
	if q.recv != nil {
		q.recv.Close()
	}
	if q.rsp != nil {
		q.rsp.Close()
	}
	q.cq.Close()
}

// postRecv posts receive buffer i.
func (q *queue) postRecv(i int) error {
	q.sgl[0] = q.recv.SGE(i*q.capLen, q.capLen)
	return q.qp.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: q.sgl[:]})
}

// run serves the queue until its connection ends or ctx does.
func (q *queue) run(ctx context.Context) {
	for !q.dead {
		n := q.cq.Poll(q.comps[:])
		if n == 0 {
			if q.cq.Wait(ctx) != nil {
				return
			}
			continue
		}
		for i := range n {
			if q.dead {
				return
			}
			q.complete(&q.comps[i])
		}
	}
}

// complete handles one completion.
func (q *queue) complete(wc *iwarp.Completion) {
	if wc.Status != iwarp.StatusSuccess {
		if wc.Status != iwarp.StatusFlushed {
			q.t.log.Warn("nvmeof: queue failed", "qid", q.qid, "op", wc.Op, "status", wc.Status, "err", wc.Err)
		}
		q.dead = true
		return
	}
	switch wc.Op {
	case iwarp.OpRecv:
		q.onCapsule(int(wc.ID), wc.Len)
	case iwarp.OpRead:
		if c := q.cmdByID(wc.ID); c != nil {
			q.dataIn(c)
		}
	case iwarp.OpSend:
		if c := q.cmdByID(wc.ID); c != nil {
			q.put(c)
		}
	}
}

// cmdByID returns the context a send work request's ID names.
func (q *queue) cmdByID(id uint64) *command {
	if id >= uint64(len(q.cmds)) {
		return nil
	}
	return q.cmds[id]
}

// fail tears the queue down: a host that broke the transport's rules
// (NVMe-oF 1.1 §2.4: a capsule that cannot be parsed has no command to
// answer). Other queues go on.
func (q *queue) fail(format string, args ...any) {
	if q.dead {
		return
	}
	q.t.log.Warn("nvmeof: queue torn down: "+fmt.Sprintf(format, args...), "qid", q.qid, "cntlid", q.cntlid())
	q.dead = true
	q.qp.Close()
}

// cntlid returns the queue's controller ID, or 0xFFFF before Connect.
func (q *queue) cntlid() uint16 {
	if q.ctrl == nil {
		return 0xFFFF
	}
	return q.ctrl.id
}

// get returns a free command context, or nil when the host has more
// commands in flight than the queue allows.
func (q *queue) get() *command {
	if n := len(q.free); n > 0 {
		c := q.free[n-1]
		q.free = q.free[:n-1]
		c.busy = true
		return c
	}
	if len(q.cmds) == q.maxCmds {
		return nil
	}
	c := &command{idx: len(q.cmds), busy: true}
	q.cmds = append(q.cmds, c)
	return c
}

// put frees a context once its response was sent.
func (q *queue) put(c *command) {
	if !c.busy {
		return
	}
	c.busy = false
	q.free = append(q.free, c)
}

// sqhd returns the SQ Head Pointer a response reports (NVMe-oF 1.1
// §2.4.1): the commands taken from the queue, modulo its size.
func (q *queue) sqhd() uint16 {
	switch {
	case q.noSQHD:
		return 0xFFFF
	case q.sqsize > 0:
		return uint16(q.consumed % uint32(q.sqsize))
	}
	return uint16(q.consumed % uint32(q.depth))
}

// onCapsule starts the command that arrived in receive buffer ri.
func (q *queue) onCapsule(ri, n int) {
	capsule := q.recv.Bytes()[ri*q.capLen : ri*q.capLen+n]
	if n < nvme.SQELen {
		q.fail("a capsule of %d bytes, shorter than a command (%d)", n, nvme.SQELen)
		return
	}
	c := q.get()
	if c == nil {
		q.fail("more than %d commands in flight", q.maxCmds)
		return
	}
	c.cmd.Decode(capsule) // never fails: n >= SQELen
	c.cqe = nvme.Completion{CID: c.cmd.CID}
	c.h, c.in, c.out, c.outLen, c.remote, c.inv = nil, nil, nil, 0, iwarp.RemoteBuffer{}, 0
	q.consumed++
	switch {
	case q.ctrl == nil:
	case q.qid == nvme.AdminQID:
		// Any admin command restarts the keep-alive timer, not only Keep
		// Alive (as Linux's target does for a host that is busy setting
		// the controller up before its first Keep Alive).
		q.ctrl.keepAlive()
	default:
		q.ctrl.ioTraffic() // an expiry reschedules the timer
	}
	q.start(c, capsule[nvme.SQELen:], ri)
}
