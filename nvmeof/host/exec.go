package host

import (
	"context"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/nvme"
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

// setData describes n bytes of s's data buffer in cmd's DPTR: in the
// capsule for a write (out not nil) that fits the queue's in-capsule room
// (an SGL Data Block of subtype Offset, NVMe over Fabrics §2.3.2), else a
// Keyed SGL Data Block naming the buffer by its STag and tagged offset;
// out is copied into the buffer. It returns the number of SGEs of s.sgl the
// capsule's Send carries and the capsule's size.
func (q *queue) setData(ctx context.Context, s *slot, cmd *nvme.Command, out []byte, n int) (nsge, size int, err error) {
	if n == 0 {
		cmd.DPTR = nvme.KeyedSGL(0, 0, 0)
		return 1, sqeLen, nil
	}
	if err := s.grow(ctx, n); err != nil {
		return 0, 0, err
	}
	if out != nil {
		copy(s.data.Bytes(), out)
		if n <= q.inline {
			cmd.DPTR = nvme.InlineSGL(0, uint32(n))
			s.sgl[1] = s.data.SGE(0, n)
			return 2, sqeLen + n, nil
		}
	}
	cmd.DPTR = nvme.KeyedSGL(s.data.TO(), uint32(n), s.data.STag())
	return 1, sqeLen, nil
}

// launch sends cmd in the held slot s with n bytes of data: out, written
// to the controller, or n bytes read from it when out is nil. On error s
// is freed; else the caller must end the command with end.
func (q *queue) launch(ctx context.Context, s *slot, cmd *nvme.Command, out []byte, n int) error {
	nsge, size, err := q.setData(ctx, s, cmd, out, n)
	if err != nil {
		q.put(s)
		return err
	}
	return q.post(s, cmd, nsge, size)
}

// end waits for the command running in s, copies what it read into in
// (if not nil) and frees the slot. A status other than success is a
// *nvmeof.StatusError. If ctx ends first the slot is abandoned to the
// completer, which frees it when the controller answers.
func (q *queue) end(ctx context.Context, s *slot, in []byte) (nvme.Completion, error) {
	r, abandoned, err := q.wait(ctx, s)
	if err != nil {
		if !abandoned {
			q.put(s) // failed with the queue: the slot is ours again
		}
		return r, err
	}
	if !r.Status.Success() {
		op, fct := s.op, s.fct
		q.put(s)
		return r, statusError(r.Status, q.qid, op, fct)
	}
	if in != nil {
		copy(in, s.data.Bytes())
	}
	q.put(s)
	return r, nil
}

// exec runs one command: out written to the controller, or len(in) bytes
// read from it.
func (q *queue) exec(ctx context.Context, cmd nvme.Command, out, in []byte) (nvme.Completion, error) {
	s, err := q.acquire(ctx)
	if err != nil {
		return nvme.Completion{}, err
	}
	if err := q.launch(ctx, s, &cmd, out, len(out)+len(in)); err != nil {
		return nvme.Completion{}, err
	}
	return q.end(ctx, s, in)
}
