package target

import (
	"errors"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/nvme"
)

// handler runs one kind of command.
type handler struct {
	// length returns the data the command transfers, in bytes, checking
	// the command's fields first; nil for a command without data. The
	// command's SGL must describe exactly that much (NVMe Base 1.4
	// §4.4: the controller does not set SGLS bit 18, so a longer SGL is
	// Data SGL Length Invalid too).
	length func(q *queue, c *command) (int, nvme.Status)
	// longerSGL lets the SGL describe more than length: only the first
	// length bytes move. Dataset Management only, as Linux's target
	// allows it: Linux 6.1's host describes 4,096 bytes of ranges
	// whatever NR says.
	longerSGL bool
	// exec runs the command: with c.in holding its data for a
	// host-to-controller transfer, or filling c.out and setting c.outLen
	// for a controller-to-host one. It sets c.cqe's DW0 and DW1 as the
	// command returns them. statusHold keeps the command outstanding
	// without an answer (Asynchronous Event Request).
	exec func(q *queue, c *command) nvme.Status
}

// statusHold is exec's answer for a command that stays outstanding.
const statusHold nvme.Status = 0xFFFF

// start runs a command from its capsule (in receive buffer ri, with
// in-capsule data incap): it checks it, fetches its data, runs it and
// answers, or starts the RDMA Read of its data and returns (dataIn goes
// on). Receive ri is posted again as soon as the capsule is no longer
// needed, and always before the response is sent: the host may send its
// next command as soon as it has the response.
func (q *queue) start(c *command, incap []byte, ri int) {
	st := q.prepare(c, incap)
	switch {
	case !st.Success():
		q.repost(ri)
		q.finish(c, st)
	case c.in != nil: // in-capsule data: run before the receive is reused
		st = c.h.exec(q, c)
		q.repost(ri)
		q.finish(c, st)
	case c.remote.Len > 0 && c.out == nil: // data to fetch from the host
		q.repost(ri)
		q.fetch(c)
	default:
		q.repost(ri)
		q.finish(c, c.h.exec(q, c))
	}
}

// repost posts receive ri again; a failure means the QP is going down.
func (q *queue) repost(ri int) {
	if err := q.postRecv(ri); err != nil && !q.dead {
		q.fail("posting a receive: %v", err)
	}
}

// prepare checks c against the queue's state and its data descriptor
// against what the command transfers, and sets c.h, c.in (in-capsule
// data), c.remote (a keyed SGL), c.out and c.inv.
func (q *queue) prepare(c *command, incap []byte) nvme.Status {
	h, st := q.lookup(&c.cmd)
	if !st.Success() {
		return st
	}
	if st := c.cmd.CheckFlags(); !st.Success() {
		return st.WithDNR()
	}
	c.h = h
	want := 0
	if h.length != nil {
		if want, st = h.length(q, c); !st.Success() {
			return st
		}
	}
	d := c.cmd.DPTR
	if want == 0 && d.Length() == 0 && (d.Type() == nvme.SGLTypeDataBlock || d.Type() == nvme.SGLTypeKeyedDataBlock) {
		// No data: Linux's host sends a null Keyed SGL Data Block, others
		// an all-zero descriptor (an SGL Data Block of length 0).
		return nvme.StatusSuccess
	}
	kind, st := d.Classify()
	if kind == nvme.SGLInvalid {
		return st.WithDNR()
	}
	if n := int64(d.Length()); n != int64(want) && !(h.longerSGL && n > int64(want)) {
		return nvme.StatusDataSGLLengthInvalid.WithDNR()
	}
	if want == 0 {
		return nvme.StatusSuccess
	}
	dir := c.cmd.DataDirection()
	if dir == nvme.DirNone || dir == nvme.DirBidirectional {
		return nvme.StatusInvalidField.WithDNR() // a transfer the opcode does not have
	}
	switch kind {
	case nvme.SGLInCapsule:
		if dir != nvme.DirHostToCtrl {
			return nvme.StatusInvalidField.WithDNR() // in-capsule data only flows to the controller
		}
		if st := d.CheckInCapsule(len(incap)); !st.Success() {
			return st.WithDNR()
		}
		off := int(d.Address())
		c.in = incap[off : off+want]
		return nvme.StatusSuccess
	case nvme.SGLKeyedInvalidate:
		c.inv = d.Key()
	}
	if err := q.grow(c, want); err != nil {
		q.t.log.Warn("nvmeof: data buffer", "qid", q.qid, "err", err)
		c.inv = 0
		return nvme.StatusInternalError
	}
	c.remote = iwarp.RemoteBuffer{STag: d.Key(), TO: d.Address(), Len: uint32(want)}
	if dir == nvme.DirCtrlToHost {
		c.out = c.buf.Bytes()[:want]
	}
	return nvme.StatusSuccess
}

// grow gives c a data buffer of at least n bytes, registered once for
// its size (a power of two from 4 KiB): contexts keep their buffers, so
// that no command registers memory once the queue has warmed up.
func (q *queue) grow(c *command, n int) error {
	if c.buf != nil && c.buf.Len() >= n {
		return nil
	}
	size := pageSize
	for size < n {
		size <<= 1
	}
	mr, err := q.t.pd.RegisterMemory(make([]byte, size), iwarp.AccessLocalWrite)
	if err != nil {
		return err
	}
	if c.buf != nil {
		c.buf.Close() // nothing moves through it: the context is ours
	}
	c.buf = mr
	return nil
}

// fetch reads a command's data from the host (RDMA Read into c.buf);
// dataIn runs the command when it has arrived.
func (q *queue) fetch(c *command) {
	if q.dead {
		q.put(c)
		return
	}
	q.sgl[0] = c.buf.SGE(0, int(c.remote.Len))
	err := q.qp.PostSend(iwarp.SendWR{ID: uint64(c.idx), Op: iwarp.OpRead, Flags: iwarp.Signaled,
		SGL: q.sgl[:], Remote: c.remote})
	if err != nil {
		q.fail("posting an RDMA Read: %v", err)
	}
}

// dataIn runs a command whose data the RDMA Read brought.
func (q *queue) dataIn(c *command) {
	if !c.busy || c.h == nil {
		return
	}
	c.in = c.buf.Bytes()[:c.remote.Len]
	q.finish(c, c.h.exec(q, c))
}

// finish answers c with status st, unless it is held.
func (q *queue) finish(c *command, st nvme.Status) {
	if st == statusHold {
		return
	}
	q.respond(c, st)
}

// respond sends c's response capsule (after the RDMA Write of its data,
// if it read any), with Send with Invalidate when the host asked for its
// key to be invalidated (NVMe over Fabrics RDMA Transport 1.0 §3.4).
func (q *queue) respond(c *command, st nvme.Status) {
	if q.dead {
		q.put(c)
		return
	}
	c.cqe.Status = st
	c.cqe.SQHD = q.sqhd()
	c.cqe.SQID = q.qid
	b := q.rsp.Bytes()[c.idx*nvme.CQELen:]
	c.cqe.Encode(b) // never fails: the slot holds CQELen bytes
	var wrs [2]iwarp.SendWR
	var sgl [2]iwarp.SGE
	n := 0
	if st.Success() && c.outLen > 0 {
		sgl[0] = c.buf.SGE(0, c.outLen)
		wrs[0] = iwarp.SendWR{ID: uint64(c.idx), Op: iwarp.OpWrite, SGL: sgl[0:1], Remote: c.remote}
		n++
	}
	sgl[1] = q.rsp.SGE(c.idx*nvme.CQELen, nvme.CQELen)
	wrs[n] = iwarp.SendWR{ID: uint64(c.idx), Op: iwarp.OpSend, Flags: iwarp.Signaled, SGL: sgl[1:2]}
	if c.inv != 0 {
		wrs[n].Flags, wrs[n].InvalidateSTag = wrs[n].Flags|iwarp.Invalidate, c.inv
	}
	if err := q.qp.PostSend(wrs[:n+1]...); err != nil {
		if errors.Is(err, iwarp.ErrQueueFull) {
			q.fail("the send queue is full: the host does not read its responses")
		} else {
			q.fail("posting a response: %v", err)
		}
		q.put(c)
	}
}
