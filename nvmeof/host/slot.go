package host

import (
	"context"
	"errors"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/nvme"
)

// slotState is where a slot is in its life (under its queue's mu).
type slotState uint8

const (
	slotFree      slotState = iota // in the queue's free list
	slotHeld                       // taken by a goroutine building a command
	slotInFlight                   // its command is posted; the holder waits
	slotAbandoned                  // posted, but the holder's context ended: the completer frees it
	slotDone                       // completed (res or err set); the holder reads and frees it
)

// slot is one command slot of a queue: CID index idx, its capsule and its
// data buffer. The goroutine holding it (from acquire to put) owns sqe,
// data and sgl; the fields marked "under q.mu" are shared with the
// completer goroutine.
type slot struct {
	q    *queue        // immutable
	idx  uint16        // immutable
	sqe  []byte        // immutable slice of q.cmds: the capsule's SQE
	done chan struct{} // immutable; capacity 1: the completer's signal that the command ended
	data *iwarp.MR     // holder's (a free slot's: release's, under q.mu): the data buffer, nil until a command needs one
	sgl  [2]iwarp.SGE  // holder's: the Send's SGL (the SQE, in-capsule data); sgl[0] immutable
	op   uint8         // holder's: the opcode of the command posted
	fct  uint8         // holder's: its FCTYPE, for a Fabrics command

	state    slotState       // under q.mu
	gen      uint16          // under q.mu: bumped for every command, the CID's top bits
	cid      uint16          // under q.mu: the CID of the command posted
	refs     int8            // under q.mu: completions still due (the Send's, the response)
	answered bool            // under q.mu: the response arrived
	res      nvme.Completion // under q.mu: the response, once answered
	err      error           // under q.mu: why the command failed without a response
}

// acquire waits for a free slot of q; it fails at once if ctx has ended,
// so that a call whose context has ended sends nothing.
func (q *queue) acquire(ctx context.Context) (*slot, error) {
	if s, err := q.tryAcquire(ctx); s != nil || err != nil {
		return s, err
	}
	select {
	case <-q.tokens:
		return q.hold()
	case <-q.dead:
		return nil, q.stopped()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// tryAcquire returns a free slot of q, or nil if none is free now; it
// fails if ctx has ended.
func (q *queue) tryAcquire(ctx context.Context) (*slot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case <-q.tokens:
		return q.hold()
	default:
		return nil, nil
	}
}

// hold pops a free slot, for a token just taken, and marks it held; it
// gives the token back and fails if the queue has stopped.
func (q *queue) hold() (*slot, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.err; err != nil {
		q.tokens <- struct{}{}
		return nil, err
	}
	s := q.free[len(q.free)-1]
	q.free = q.free[:len(q.free)-1]
	s.state = slotHeld
	return s, nil
}

// pushFree makes s free (q.mu held, or q not yet shared).
func (q *queue) pushFree(s *slot) {
	s.state = slotFree
	q.free = append(q.free, s)
	q.tokens <- struct{}{}
}

// stopped returns the queue's error.
func (q *queue) stopped() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// put frees a held or completed slot; once the queue has been released
// it closes the slot's buffer.
func (q *queue) put(s *slot) {
	q.mu.Lock()
	var mr *iwarp.MR
	if q.released {
		mr, s.data = s.data, nil
	}
	q.pushFree(s)
	q.mu.Unlock()
	if mr != nil {
		mr.Close()
	}
}

// sendRef marks the ID of a capsule's Send whose completion the slot
// waits for (a capsule not copied at posting); the low bits are the slot.
const sendRef = 1 << 32

// post sends cmd (its DPTR set) in s, with nsge SGEs of s.sgl (the SQE and
// any in-capsule data, size bytes in all): it gives it the slot's next CID
// and writes it into the slot's capsule. On error nothing was posted and s
// is freed. Once post returns nil the caller must wait for the command.
func (q *queue) post(s *slot, cmd *nvme.Command, nsge, size int) error {
	s.op, s.fct = cmd.Opcode, cmd.FCType()
	q.mu.Lock()
	if err := q.err; err != nil {
		q.mu.Unlock()
		q.put(s)
		return err
	}
	s.gen++
	s.cid = s.idx | (s.gen<<cidSlotBits)&^cidSlotMask
	cmd.CID = s.cid
	cmd.Flags |= nvme.FlagSGL
	cmd.Encode(s.sqe) // cannot fail: the slot's capsule has sqeLen bytes
	s.state, s.refs, s.answered, s.err = slotInFlight, 1, false, nil
	wr := iwarp.SendWR{ID: uint64(s.idx), Op: iwarp.OpSend, Flags: iwarp.Inline, SGL: s.sgl[:nsge]}
	if size > q.maxInline {
		// The QP sends from the slot's buffers: they are the QP's until
		// the Send completes.
		s.refs++
		wr.ID |= sendRef
		wr.Flags = iwarp.Signaled
	} else if q.sent++; q.sent%uint64(len(q.slots)) == 0 {
		wr.Flags |= iwarp.Signaled
	}
	q.mu.Unlock()
	err := q.qp.PostSend(wr)
	if errors.Is(err, iwarp.ErrQueueFull) && wr.Flags&iwarp.Signaled == 0 {
		// Not expected (see newQueue); the send queue's last entry
		// takes a signaled request.
		wr.Flags |= iwarp.Signaled
		err = q.qp.PostSend(wr)
	}
	if err != nil {
		// The QP refused it: the queue is no longer usable. The command
		// ends with the queue's error once the completer has flushed it.
		q.fail(err)
	}
	return nil
}

// wait waits until the command posted in s ends and returns its response,
// or the queue's error if it ended without one; the slot is then the
// caller's again (put frees it). If ctx ends first, wait returns ctx's
// error with abandoned set: the slot stays out of use, with its buffer,
// until the controller answers or the queue is torn down, and the
// completer frees it.
func (q *queue) wait(ctx context.Context, s *slot) (res nvme.Completion, abandoned bool, err error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		q.mu.Lock()
		if s.state == slotInFlight {
			s.state = slotAbandoned
			q.mu.Unlock()
			return res, true, ctx.Err()
		}
		q.mu.Unlock()
		<-s.done // completed meanwhile: the signal is there
	}
	q.mu.Lock()
	res, err = s.res, s.err
	q.mu.Unlock()
	return res, false, err
}

// finish ends s's command once both its completions came (q.mu held): it
// wakes the holder, or frees the slot if the holder gave up on it.
func (q *queue) finish(s *slot) {
	if s.state == slotAbandoned {
		q.pushFree(s)
		return
	}
	s.state = slotDone
	s.done <- struct{}{}
}
