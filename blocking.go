package iwarp

import (
	"context"
	"fmt"

	"github.com/goiwarp/iwarp/internal/verbs"
)

// Blocking convenience calls. They post an ordinary work request on the
// same path as PostSend, but its completion goes to the caller instead of
// the send CQ.
//
// If ctx ends first they return ctx's error and the work request stays in
// flight: its buffers still belong to the QP until it completes. Because
// send completions are reported in posting order, any later work request's
// completion (or the QP's Done) proves it has (docs/semantics.md).

// Send sends the SGL as one message into the peer's next posted receive and
// waits until it was handed to TCP.
func (qp *QP) Send(ctx context.Context, sgl ...SGE) error {
	return qp.do(ctx, SendWR{Op: OpSend, SGL: sgl})
}

// Write writes the SGL into the peer's memory at remote and waits until it
// was handed to TCP (not until the peer placed it: see docs/semantics.md
// for remote-completion idioms).
func (qp *QP) Write(ctx context.Context, remote RemoteBuffer, sgl ...SGE) error {
	return qp.do(ctx, SendWR{Op: OpWrite, SGL: sgl, Remote: remote})
}

// Read reads sink.Length bytes of the peer's memory at remote into sink
// (RFC 5040 RDMA Read, which names the sink's STag on the wire) and waits
// until they are placed.
func (qp *QP) Read(ctx context.Context, remote RemoteBuffer, sink SGE) error {
	return qp.do(ctx, SendWR{Op: OpRead, SGL: []SGE{sink}, Remote: remote})
}

// Do posts wr and waits for its completion, whatever its Signaled flag.
func (qp *QP) Do(ctx context.Context, wr SendWR) (Completion, error) {
	w := qp.getWaiter()
	if err := postError(qp.e.PostWait(wr, w)); err != nil {
		qp.putWaiter(w)
		return Completion{}, err
	}
	c, err := qp.e.WaitFor(ctx, w)
	if err != nil {
		return Completion{}, err // w is left to its completion, not reused
	}
	qp.putWaiter(w)
	return engineCompletion(&c), nil
}

// getWaiter returns an idle Waiter of the QP's pool, or a new one.
func (qp *QP) getWaiter() *verbs.Waiter {
	qp.wmu.Lock()
	defer qp.wmu.Unlock()
	if n := len(qp.waiters); n > 0 {
		w := qp.waiters[n-1]
		qp.waiters = qp.waiters[:n-1]
		return w
	}
	return verbs.NewWaiter()
}

// putWaiter returns an idle Waiter to the pool.
func (qp *QP) putWaiter(w *verbs.Waiter) {
	qp.wmu.Lock()
	qp.waiters = append(qp.waiters, w)
	qp.wmu.Unlock()
}

func (qp *QP) do(ctx context.Context, wr SendWR) error {
	c, err := qp.Do(ctx, wr)
	if err != nil {
		return err
	}
	if c.Status != StatusSuccess {
		return &WRError{Status: c.Status, Op: c.Op, Err: c.Err}
	}
	return nil
}

// WRError is a work request that completed with a status other than
// StatusSuccess.
type WRError struct {
	Status Status
	Op     Opcode
	Err    error
}

// Error describes the failure.
func (e *WRError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("iwarp: %v %v: %s", e.Op, e.Status, detail(e.Err))
	}
	return fmt.Sprintf("iwarp: %v %v", e.Op, e.Status)
}

// Unwrap returns the cause.
func (e *WRError) Unwrap() error { return e.Err }
