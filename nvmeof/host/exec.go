package host

import (
	"context"

	"github.com/goiwarp/iwarp"
)

// dataAccess is the access of a slot's data buffer: the controller RDMA
// Reads what a command writes and RDMA Writes what it reads.
const dataAccess = iwarp.AccessRemoteRead | iwarp.AccessRemoteWrite

// grow makes s's data buffer hold at least n bytes (n at most the
// controller's transfer limit): a power of two from 4 KiB, or the limit.
// Holder only.
func (s *slot) grow(ctx context.Context, n int) error {
	if s.data != nil && s.data.Len() >= n {
		return nil
	}
	size := minTransfer
	for size < n {
		size <<= 1
	}
	if lim := s.q.ctrl.maxXfer; size > lim && n <= lim {
		size = lim
	}
	mr, err := s.q.ctrl.pd.RegisterMemory(make([]byte, size), dataAccess)
	if err != nil {
		return err
	}
	if old := s.data; old != nil {
		// Nothing moves through it (the slot is held): this returns at
		// once, and the registration is gone whatever it returns.
		old.Deregister(ctx)
	}
	s.data = mr
	return nil
}

// setData describes n bytes of s's data buffer in its SQE: in the capsule
// for a write (out not nil) that fits the queue's in-capsule room, else
// with a keyed SGL naming the buffer; out is copied into the buffer. It
// returns the number of SGEs of s.sgl the capsule's Send carries and the
// capsule's size.
func (q *queue) setData(ctx context.Context, s *slot, out []byte, n int) (nsge, size int, err error) {
	if n == 0 {
		putKeyedSGL(s.sqe, 0, 0, 0)
		return 1, sqeLen, nil
	}
	if err := s.grow(ctx, n); err != nil {
		return 0, 0, err
	}
	if out != nil {
		copy(s.data.Bytes(), out)
		if n <= q.inline {
			putInlineSGL(s.sqe, 0, n)
			s.sgl[1] = s.data.SGE(0, n)
			return 2, sqeLen + n, nil
		}
	}
	putKeyedSGL(s.sqe, s.data.TO(), n, s.data.STag())
	return 1, sqeLen, nil
}

// start sends the command of sqe (its SGL and CID are filled here) with n
// bytes of data: out, written to the controller, or n bytes read from it
// when out is nil. The command then runs in the returned slot; the caller
// must end it with end.
func (q *queue) start(ctx context.Context, sqe *[sqeLen]byte, out []byte, n int) (*slot, error) {
	s, err := q.acquire(ctx)
	if err != nil {
		return nil, err
	}
	copy(s.sqe, sqe[:])
	nsge, size, err := q.setData(ctx, s, out, n)
	if err != nil {
		q.put(s)
		return nil, err
	}
	if err := q.post(s, nsge, size); err != nil {
		return nil, err
	}
	return s, nil
}

// end waits for the command running in s, copies what it read into in
// (if not nil) and frees the slot. A status other than success is a
// *nvmeof.StatusError. If ctx ends first the slot is abandoned to the
// completer, which frees it when the controller answers.
func (q *queue) end(ctx context.Context, s *slot, in []byte) (cqe, error) {
	r, abandoned, err := q.wait(ctx, s)
	if err != nil {
		if !abandoned {
			q.put(s) // failed with the queue: the slot is ours again
		}
		return r, err
	}
	if r.status != 0 {
		q.put(s)
		return r, statusError(r)
	}
	if in != nil {
		copy(in, s.data.Bytes())
	}
	q.put(s)
	return r, nil
}

// exec runs one command (start and end).
func (q *queue) exec(ctx context.Context, sqe *[sqeLen]byte, out, in []byte) (cqe, error) {
	s, err := q.start(ctx, sqe, out, len(out)+len(in))
	if err != nil {
		return cqe{}, err
	}
	return q.end(ctx, s, in)
}
