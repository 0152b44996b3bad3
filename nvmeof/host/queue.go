package host

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/nvme"
)

// queue is one NVMe queue over one iWARP connection (NVMe over Fabrics
// RDMA Transport §2): the admin queue (QID 0) or an I/O queue. Each command
// runs in a slot: the slot's capsule is sent with a Send, the controller
// moves the data with RDMA Read and Write through the slot's registered
// buffer (a keyed SGL), and its response capsule arrives in one of the
// receives the queue keeps posted. A slot is free again once both its
// Send completed and its response arrived, so a CID is never reused while
// the controller may still answer it.
type queue struct {
	ctrl *Controller // immutable
	qid  uint16      // immutable
	qp   *iwarp.QP   // immutable
	cq   *iwarp.CQ   // immutable; the send and receive completions of qp
	// cmds holds sqeLen bytes per slot, each written by the slot's holder
	// and read by the QP while the slot's Send is outstanding; rsps holds
	// cqeLen bytes per receive, written by the QP and read by the
	// completer goroutine (run). Both immutable.
	cmds, rsps *iwarp.MR
	slots      []slot // immutable slice; see slot for its fields' owners
	// tokens holds a value per free slot (capacity len(slots)): taking
	// one entitles a goroutine to pop a slot from free.
	tokens chan struct{}
	// inline is the most write data sent inside the capsule (0: none),
	// and maxInline the most capsule bytes the QP copies at posting
	// (iwarp.Inline). Immutable.
	inline, maxInline int

	mu   sync.Mutex // guards err, sent, free, released and the slots' fields marked "under q.mu"
	free []*slot    // the free slots, a stack: the most recently used (its buffer warm) first
	err  error      // why the queue stopped; set once, under mu
	// released is set by release: the buffers of the slots free then are
	// closed, and put closes the buffer of a slot given back later.
	released bool
	sent     uint64        // capsules posted with the Inline flag (signalling every len(slots)-th)
	dead     chan struct{} // closed when err is set
	done     chan struct{} // closed when the completer goroutine has returned
}

// newQueue creates queue qid with entries submission queue entries, which
// sends at most inline bytes of write data in a capsule, and connects it
// to the target; its completer goroutine is running when it returns.
//
// Capsules of at most maxInline bytes are posted with iwarp.Inline (the
// QP copies them, so the slot is free once the response arrived: the
// controller answers only commands it received whole) and, but for every
// nslots-th, unsignaled: their Sends complete only to free the send
// queue's entries. A send queue of 2*nslots+1 entries cannot fill so: a
// signaled capsule is followed by at most nslots-1 others before its
// completion is polled (later ones need slots that responses free, and
// those responses arrive after it completed), so at most 2*nslots-1
// entries are in use.
func newQueue(ctx context.Context, c *Controller, qid uint16, entries, inline int, cntlid uint16) (*queue, error) {
	nslots, nrecv := entries-1, entries
	q := &queue{ctrl: c, qid: qid, tokens: make(chan struct{}, nslots), free: make([]*slot, 0, nslots), inline: inline,
		maxInline: min(c.dev.Attributes().MaxInline, sqeLen+inline),
		dead:      make(chan struct{}), done: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			q.release()
		}
	}()
	var err error
	if q.cq, err = c.dev.NewCQ(2*nslots+1+nrecv, nil); err != nil {
		return nil, err
	}
	q.qp, err = c.pd.NewQP(&iwarp.QPConfig{SendCQ: q.cq, RecvCQ: q.cq,
		SendQueueDepth: 2*nslots + 1, RecvQueueDepth: nrecv, MaxSGE: 2, MaxInline: q.maxInline,
		IRD: min(nslots, 128)})
	if err != nil {
		return nil, err
	}
	if q.cmds, err = c.pd.RegisterMemory(make([]byte, nslots*sqeLen), 0); err != nil {
		return nil, err
	}
	if q.rsps, err = c.pd.RegisterMemory(make([]byte, nrecv*cqeLen), iwarp.AccessLocalWrite); err != nil {
		return nil, err
	}
	for i := range nrecv {
		if err := q.postRecv(i); err != nil {
			return nil, err
		}
	}
	opts := &iwarp.ConnOptions{PrivateData: cmRequest(qid, uint16(nrecv), uint16(entries-1), cntlid), DisableCRC: c.s.noCRC}
	if err := q.qp.Connect(ctx, "tcp", c.addr, opts); err != nil {
		var rej *iwarp.RejectedError
		if errors.As(err, &rej) {
			reason := "no NVMe status"
			if r, derr := nvme.DecodeCMReject(rej.PrivateData); derr == nil {
				reason = r.STS.String()
			}
			return nil, fmt.Errorf("%w: queue %d: %s: %w", ErrRejected, qid, reason, err)
		}
		return nil, fmt.Errorf("nvmeof: queue %d: %w", qid, err)
	}
	// The controller's receive queue may be smaller than asked (the
	// accept's CRQSIZE): never have more commands outstanding than it
	// holds, since a Send that finds no receive is fatal on iWARP.
	// (Linux's host ignores the accept's private data; a target that sent
	// none, or not NVMe's, is taken at its word.)
	if rep, err := nvme.DecodeCMReply(q.qp.Attributes().PeerPrivateData); err == nil && int(rep.CRQSIZE) < nslots {
		if rep.CRQSIZE == 0 {
			return nil, fmt.Errorf("%w: queue %d: the accept's CRQSIZE is 0", ErrProtocol, qid)
		}
		nslots = int(rep.CRQSIZE)
	}
	q.slots = make([]slot, nslots)
	cmd := q.cmds.Bytes()
	for i := range q.slots {
		s := &q.slots[i]
		s.q, s.idx = q, uint16(i)
		s.sqe = cmd[i*sqeLen : (i+1)*sqeLen : (i+1)*sqeLen]
		s.sgl[0] = q.cmds.SGE(i*sqeLen, sqeLen)
		s.done = make(chan struct{}, 1)
	}
	for i := len(q.slots) - 1; i >= 0; i-- {
		q.pushFree(&q.slots[i])
	}
	ok = true
	go q.run()
	return q, nil
}

// postRecv posts receive i, the response buffer at i*cqeLen.
func (q *queue) postRecv(i int) error {
	return q.qp.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{q.rsps.SGE(i*cqeLen, cqeLen)}})
}

// release frees what newQueue made (a slot still held keeps its buffer
// until put), for a queue whose completer never ran
// or has returned.
func (q *queue) release() {
	if q.qp != nil {
		q.qp.Close()
	}
	for _, mr := range []*iwarp.MR{q.cmds, q.rsps} {
		if mr != nil {
			mr.Close()
		}
	}
	// A slot still held (a caller between taking it and giving it back)
	// keeps its buffer, which its holder may be replacing: put closes it.
	var mrs []*iwarp.MR
	q.mu.Lock()
	q.released = true
	for i := range q.slots {
		if s := &q.slots[i]; s.state == slotFree && s.data != nil {
			mrs = append(mrs, s.data)
			s.data = nil
		}
	}
	q.mu.Unlock()
	for _, mr := range mrs {
		mr.Close()
	}
	if q.cq != nil {
		q.cq.Close()
	}
}

// run is the queue's completer goroutine: it takes every completion of the
// queue's CQ, matches responses to slots and reposts their receives, and
// once the QP has been torn down fails the commands still outstanding.
func (q *queue) run() {
	defer close(q.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-q.qp.Done():
		case <-ctx.Done():
		}
		cancel()
	}()
	var buf [32]iwarp.Completion
	for {
		n := q.cq.Poll(buf[:])
		for i := range buf[:n] {
			q.complete(&buf[i])
		}
		if n > 0 {
			continue
		}
		select {
		case <-q.qp.Done(): // every work request has completed or flushed
			if q.cq.Len() > 0 {
				continue
			}
			cause := q.qp.Err()
			if cause == nil {
				cause = iwarp.ErrQPClosed
			}
			q.fail(cause)
			q.flushSlots()
			return
		default:
		}
		q.cq.Wait(ctx) // ends with a completion, or when the QP is torn down
	}
}

// complete handles one completion (completer goroutine).
func (q *queue) complete(c *iwarp.Completion) {
	if c.Status != iwarp.StatusSuccess {
		q.fail(c.Err)
		return
	}
	if c.Op != iwarp.OpRecv { // a capsule's Send
		if c.ID&sendRef == 0 {
			return // signaled only to free send queue entries
		}
		s := &q.slots[c.ID&^sendRef]
		q.mu.Lock()
		s.refs--
		if s.refs == 0 {
			q.finish(s)
		}
		q.mu.Unlock()
		return
	}
	if c.Len != cqeLen {
		q.fail(fmt.Errorf("%w: a response capsule of %d bytes (want %d)", ErrProtocol, c.Len, cqeLen))
		return
	}
	i := int(c.ID)
	var r nvme.Completion
	r.Decode(q.rsps.Bytes()[i*cqeLen:]) // cannot fail: the buffer has cqeLen bytes
	// Post the receive again before the slot can be reused, so that a
	// receive waits for every command outstanding.
	if err := q.postRecv(i); err != nil {
		q.fail(err)
		return
	}
	idx := int(r.CID & cidSlotMask)
	if idx >= len(q.slots) {
		q.fail(fmt.Errorf("%w: a response for CID %#x, never used", ErrProtocol, r.CID))
		return
	}
	s := &q.slots[idx]
	q.mu.Lock()
	if (s.state != slotInFlight && s.state != slotAbandoned) || s.cid != r.CID || s.answered {
		q.mu.Unlock()
		q.fail(fmt.Errorf("%w: a response for CID %#x, not outstanding", ErrProtocol, r.CID))
		return
	}
	s.answered, s.res = true, r
	s.refs--
	if s.refs == 0 {
		q.finish(s)
	}
	q.mu.Unlock()
}

// fail stops the queue and its controller for cause (a no-op once the
// queue has stopped, for whatever reason).
func (q *queue) fail(cause error) {
	q.mu.Lock()
	stopped := q.err != nil
	q.mu.Unlock()
	if !stopped {
		q.stop(q.ctrl.fail(fmt.Errorf("queue %d: %w", q.qid, cause)))
	}
}

// stop records err as the reason the queue stopped, if it is the first;
// commands not yet posted fail with it, and those outstanding fail with it
// once the QP has been torn down.
func (q *queue) stop(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err == nil {
		q.err = err
		close(q.dead)
	}
}

// flushSlots fails the commands still outstanding with the queue's error
// and frees the abandoned slots (completer goroutine, after the QP was torn
// down: no completion can come any more).
func (q *queue) flushSlots() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := range q.slots {
		s := &q.slots[i]
		switch s.state {
		case slotInFlight:
			s.err = q.err
			s.state = slotDone
			s.done <- struct{}{}
		case slotAbandoned:
			q.pushFree(s)
		}
	}
}
