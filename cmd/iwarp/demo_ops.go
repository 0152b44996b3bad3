package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/goiwarp/iwarp"
)

// The verified operations of `iwarp demo`. Each moves bytes that encode
// their own offset from a source to a destination buffer and compares them
// once a completion on the destination's side orders the placement before
// the comparison (docs/semantics.md rule 2). Memory a peer reads is filled
// before it is registered (rule 2b).

// fill writes bytes that encode their own offset.
func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i) ^ byte(i>>8) ^ byte(i>>16) ^ seed
	}
}

// transfer is the buffers of one operation: src (on srcPD, filled) and dst
// (on dstPD, zeroed), each at least one byte (a region cannot be empty),
// plus a zero-length note receive buffer on the destination side.
type transfer struct {
	src, dst, note *iwarp.MR
	sbuf, dbuf     []byte
}

func newTransfer(srcPD, dstPD *iwarp.PD, n int, srcAcc, dstAcc iwarp.Access, seed byte) (*transfer, error) {
	t := &transfer{sbuf: make([]byte, max(n, 1)), dbuf: make([]byte, max(n, 1))}
	fill(t.sbuf[:n], seed)
	var err error
	if t.src, err = srcPD.RegisterMemory(t.sbuf, srcAcc); err != nil {
		return nil, err
	}
	if t.dst, err = dstPD.RegisterMemory(t.dbuf, dstAcc); err != nil {
		return nil, err
	}
	if t.note, err = dstPD.RegisterMemory(make([]byte, 1), iwarp.AccessLocalWrite); err != nil {
		return nil, err
	}
	t.sbuf, t.dbuf = t.sbuf[:n], t.dbuf[:n]
	return t, nil
}

func (t *transfer) close(ctx context.Context) {
	for _, mr := range []*iwarp.MR{t.src, t.dst, t.note} {
		_ = mr.Deregister(ctx)
	}
}

// verify compares the destination with the source.
func (t *transfer) verify() error {
	if !bytes.Equal(t.dbuf, t.sbuf) {
		return fmt.Errorf("destination bytes differ from the source")
	}
	return nil
}

// expectRecv waits for the next receive completion at s and checks its
// length, and its immediate data when imm is not nil.
func expectRecv(ctx context.Context, s *demoSide, n int, imm *uint64) error {
	_, err := nextRecv(ctx, s, n, imm)
	return err
}

// nextRecv is expectRecv returning the completion.
func nextRecv(ctx context.Context, s *demoSide, n int, imm *uint64) (iwarp.Completion, error) {
	c, err := s.cq.Next(ctx)
	if err != nil {
		return c, err
	}
	if c.Status != iwarp.StatusSuccess || c.Op != iwarp.OpRecv || c.Len != n {
		return c, fmt.Errorf("receive completed %v (%v) with %d bytes, want %d", c.Status, c.Op, c.Len, n)
	}
	if imm != nil && (!c.HasImmediate || c.Immediate != *imm) {
		return c, fmt.Errorf("receive without the immediate data %#x: %+v", *imm, c)
	}
	return c, nil
}

// run times op and then verifies the transfer.
func (t *transfer) run(ctx context.Context, op func() error) (time.Duration, error) {
	defer t.close(ctx)
	start := time.Now()
	if err := op(); err != nil {
		return time.Since(start), err
	}
	d := time.Since(start)
	return d, t.verify()
}

// demoSend sends n bytes into a receive of n bytes.
func demoSend(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	t, err := newTransfer(from.pd, to.pd, n, 0, iwarp.AccessLocalWrite, 0x11)
	if err != nil {
		return 0, err
	}
	if err := to.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{t.dst.SGE(0, n)}}); err != nil {
		return 0, err
	}
	return t.run(ctx, func() error {
		if err := from.qp.Send(ctx, t.src.SGE(0, n)); err != nil {
			return err
		}
		return expectRecv(ctx, to, n, nil)
	})
}

// demoWrite writes n bytes, then Sends a note: the note's arrival at the
// responder proves the Write was placed (RFC 5040 §5.5).
func demoWrite(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	t, err := newTransfer(from.pd, to.pd, n, 0, iwarp.AccessRemoteWrite, 0x22)
	if err != nil {
		return 0, err
	}
	if err := to.qp.PostRecv(iwarp.RecvWR{ID: 2, SGL: []iwarp.SGE{t.note.SGE(0, 0)}}); err != nil {
		return 0, err
	}
	return t.run(ctx, func() error {
		if err := from.qp.Write(ctx, t.dst.Remote(), t.src.SGE(0, n)); err != nil {
			return err
		}
		if err := from.qp.Send(ctx); err != nil {
			return err
		}
		return expectRecv(ctx, to, 0, nil)
	})
}

// demoWriteImm writes n bytes with immediate data; the immediate completion
// comes after the Write's placement.
func demoWriteImm(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	t, err := newTransfer(from.pd, to.pd, n, 0, iwarp.AccessRemoteWrite, 0x44)
	if err != nil {
		return 0, err
	}
	if err := to.qp.PostRecv(iwarp.RecvWR{ID: 4, SGL: []iwarp.SGE{t.note.SGE(0, 0)}}); err != nil {
		return 0, err
	}
	imm := uint64(n)
	return t.run(ctx, func() error {
		if err := from.qp.WriteWithImmediate(ctx, t.dst.Remote(), imm, t.src.SGE(0, n)); err != nil {
			return err
		}
		return expectRecv(ctx, to, 0, &imm)
	})
}

// demoSendImm sends n bytes with immediate data (V2) into a receive of
// exactly n bytes.
func demoSendImm(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	t, err := newTransfer(from.pd, to.pd, n, 0, iwarp.AccessLocalWrite, 0x55)
	if err != nil {
		return 0, err
	}
	if err := to.qp.PostRecv(iwarp.RecvWR{ID: 5, SGL: []iwarp.SGE{t.dst.SGE(0, n)}}); err != nil {
		return 0, err
	}
	imm := uint64(0x5eed)
	return t.run(ctx, func() error {
		if err := from.qp.SendWithImmediate(ctx, imm, t.src.SGE(0, n)); err != nil {
			return err
		}
		return expectRecv(ctx, to, n, &imm)
	})
}

// demoRead reads n bytes of the responder's memory.
func demoRead(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	t, err := newTransfer(to.pd, from.pd, n, iwarp.AccessRemoteRead, iwarp.AccessLocalWrite, 0x33)
	if err != nil {
		return 0, err
	}
	remote, err := t.src.RemoteSlice(0, n)
	if err != nil {
		return 0, err
	}
	return t.run(ctx, func() error { return from.qp.Read(ctx, remote, t.dst.SGE(0, n)) })
}

// demoReadV2 reads n bytes with RDMA Read V2 into a sink of two SGEs.
func demoReadV2(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	t, err := newTransfer(to.pd, from.pd, n, iwarp.AccessRemoteRead, iwarp.AccessLocalWrite, 0x66)
	if err != nil {
		return 0, err
	}
	remote, err := t.src.RemoteSlice(0, n)
	if err != nil {
		return 0, err
	}
	return t.run(ctx, func() error {
		return from.qp.ReadV2(ctx, remote, t.dst.SGE(0, n/2), t.dst.SGE(n/2, n-n/2))
	})
}

// demoImmediate sends Immediate Data with a solicited event into a
// zero-length receive.
func demoImmediate(ctx context.Context, from, to *demoSide) (time.Duration, error) {
	t, err := newTransfer(from.pd, to.pd, 0, 0, iwarp.AccessLocalWrite, 0)
	if err != nil {
		return 0, err
	}
	if err := to.qp.PostRecv(iwarp.RecvWR{ID: 3, SGL: []iwarp.SGE{t.note.SGE(0, 0)}}); err != nil {
		return 0, err
	}
	imm := uint64(0xc0ffee0001020304)
	return t.run(ctx, func() error {
		if err := from.qp.ImmediateData(ctx, imm, iwarp.Solicited); err != nil {
			return err
		}
		c, err := nextRecv(ctx, to, 0, &imm)
		if err == nil && !c.Solicited {
			err = fmt.Errorf("the receive completion does not report the solicited event")
		}
		return err
	})
}
