package host

import (
	"context"
	"fmt"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// window is the most commands one ReadAt or WriteAt keeps outstanding
// when it splits a transfer.
const window = 8

// rw reads (op nvme.NVMRead) into p or writes p from block lba on, in
// commands of at most the transfer limit, all on one I/O queue. It starts
// a command only with a free slot at hand while it has others outstanding
// (and waits for one only when it has none), so goroutines splitting
// transfers never hold slots while waiting for each other's.
func (n *Namespace) rw(ctx context.Context, op uint8, p []byte, lba uint64) error {
	bs := n.info.BlockSize
	if len(p)%bs != 0 {
		return fmt.Errorf("%w: %d bytes with blocks of %d", ErrRange, len(p), bs)
	}
	if err := n.check(lba, uint64(len(p)/bs)); err != nil {
		return err
	}
	if err := n.c.usable(); err != nil {
		return err
	}
	q, err := n.c.pick()
	if err != nil {
		return err
	}
	chunk := n.c.maxXfer / bs * bs
	if len(p) <= chunk {
		s, err := q.acquire(ctx)
		if err != nil {
			return err
		}
		if err := n.launch(ctx, q, s, op, p, lba); err != nil {
			return err
		}
		return n.land(ctx, q, s, op, p)
	}
	type command struct {
		s *slot
		p []byte
	}
	var pend [window]command
	head, count := 0, 0
	var first error
	for off := 0; (off < len(p) && first == nil) || count > 0; {
		if off < len(p) && first == nil && count < window {
			var s *slot
			if count == 0 {
				s, err = q.acquire(ctx)
			} else {
				s, err = q.tryAcquire(ctx)
			}
			if err == nil && s != nil {
				m := min(chunk, len(p)-off)
				err = n.launch(ctx, q, s, op, p[off:off+m], lba+uint64(off/bs))
				if err == nil {
					pend[(head+count)%window] = command{s, p[off : off+m]}
					count++
					off += m
					continue
				}
			}
			if err != nil {
				first = err
				continue
			}
		}
		c := pend[head]
		pend[head] = command{}
		head, count = (head+1)%window, count-1
		if err := n.land(ctx, q, c.s, op, c.p); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// launch sends one read or write of p at lba in slot s.
func (n *Namespace) launch(ctx context.Context, q *queue, s *slot, op uint8, p []byte, lba uint64) error {
	cmd := nvme.RW{SLBA: lba, NLB: uint16(len(p)/n.info.BlockSize - 1)}.Command(op, 0, n.info.ID, nvme.SGL{})
	var out []byte
	if op == nvme.NVMWrite {
		out = p
	}
	return q.launch(ctx, s, &cmd, out, len(p))
}

// land waits for the command in s and, for a read, copies its data into p.
func (n *Namespace) land(ctx context.Context, q *queue, s *slot, op uint8, p []byte) error {
	var in []byte
	if op == nvme.NVMRead {
		in = p
	}
	_, err := q.end(ctx, s, in)
	return err
}
