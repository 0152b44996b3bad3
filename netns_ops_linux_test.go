//go:build amd64 || arm64

package iwarp_test

import (
	"context"
	"fmt"

	"github.com/goiwarp/iwarp"
)

// The operation suite of the real-network test: every operation, one
// direction, each size, data verified. The goroutine that runs it acts for
// both QPs (it posts the receiver's receives and reads its memory after
// the completions), which is what makes its memory accesses ordered for
// the race detector (docs/semantics.md §2).

// netnsDir is one direction of a connection: from initiates, to is the
// target.
type netnsDir struct {
	id       int // distinguishes the patterns of the two directions
	from, to *endpoint
	// to's memory: [0, span) Write/Read target, [span, 2span) Write with
	// Immediate target, then 16 bytes of counters; the receive buffer.
	target, recv *iwarp.MR
	tbuf, rbuf   *guarded
	// from's memory: source and two sinks.
	src, sink   *iwarp.MR
	sbuf, kbuf  *guarded
	span        int // the largest size, rounded up to 8
	bytesMoved  int64
	atomicsDone int
}

// newNetnsDir registers the memory of one direction for sizes up to span.
func newNetnsDir(id int, from, to *endpoint, span int) (*netnsDir, error) {
	span = (span + 7) &^ 7 // keeps the counters aligned
	d := &netnsDir{id: id, from: from, to: to, span: span,
		tbuf: newGuarded(2*span+16, loadGuard), rbuf: newGuarded(span, loadGuard),
		sbuf: newGuarded(span, loadGuard), kbuf: newGuarded(2*span, loadGuard)}
	var err error
	reg := func(pd *iwarp.PD, g *guarded, a iwarp.Access) *iwarp.MR {
		if err != nil {
			return nil
		}
		var mr *iwarp.MR
		mr, err = pd.RegisterMemory(g.bytes(), a)
		return mr
	}
	d.target = reg(to.pd, d.tbuf, iwarp.AccessRemoteWrite|iwarp.AccessRemoteRead|iwarp.AccessRemoteAtomic)
	d.recv = reg(to.pd, d.rbuf, iwarp.AccessLocalWrite)
	d.src = reg(from.pd, d.sbuf, 0)
	d.sink = reg(from.pd, d.kbuf, iwarp.AccessLocalWrite)
	return d, err
}

// intact reports whether every canary of the direction's memory is.
func (d *netnsDir) intact() bool {
	return d.tbuf.intact() && d.rbuf.intact() && d.sbuf.intact() && d.kbuf.intact()
}

// run does every operation at each size, then the atomics.
func (d *netnsDir) run(ctx context.Context, sizes []int, atomics int) error {
	for seq, n := range sizes {
		if n > d.span {
			return fmt.Errorf("size %d above %d", n, d.span)
		}
		for _, op := range []struct {
			name string
			f    func(context.Context, int, int) error
		}{
			{"Write then Read", d.writeRead}, {"Read V2", d.readV2}, {"Send", d.send},
			{"Send with Immediate", d.sendImm}, {"Write with Immediate", d.writeImm},
		} {
			if err := op.f(ctx, seq, n); err != nil {
				return fmt.Errorf("%s of %d bytes: %w", op.name, n, err)
			}
		}
	}
	return d.atomics(ctx, atomics)
}

// writeRead writes a pattern into the target and reads it back.
func (d *netnsDir) writeRead(ctx context.Context, seq, n int) error {
	fillPattern(d.sbuf.bytes()[:n], d.id, seq, kindWrite)
	remote, _ := d.target.RemoteSlice(0, n)
	if err := d.from.qp.Write(ctx, remote, d.src.SGE(0, n)); err != nil {
		return err
	}
	clear(d.kbuf.bytes()[:n])
	if err := d.from.qp.Read(ctx, remote, d.sink.SGE(0, n)); err != nil {
		return err
	}
	d.bytesMoved += 2 * int64(n)
	return verifyPattern(d.kbuf.bytes()[:n], d.id, seq, kindWrite)
}

// readV2 reads the same bytes back with Read V2 into two SGEs.
func (d *netnsDir) readV2(ctx context.Context, seq, n int) error {
	remote, _ := d.target.RemoteSlice(0, n)
	h := n / 2
	clear(d.kbuf.bytes()[:h])
	clear(d.kbuf.bytes()[d.span : d.span+n-h])
	if err := d.from.qp.ReadV2(ctx, remote, d.sink.SGE(0, h), d.sink.SGE(d.span, n-h)); err != nil {
		return err
	}
	d.bytesMoved += int64(n)
	got := append(append([]byte(nil), d.kbuf.bytes()[:h]...), d.kbuf.bytes()[d.span:d.span+n-h]...)
	return verifyPattern(got, d.id, seq, kindWrite)
}

// send sends a pattern into a receive posted just before.
func (d *netnsDir) send(ctx context.Context, seq, n int) error {
	return d.message(ctx, seq, n, kindSend, func() error { return d.from.qp.Send(ctx, d.src.SGE(0, n)) })
}

// sendImm is send with Immediate Data (V2).
func (d *netnsDir) sendImm(ctx context.Context, seq, n int) error {
	return d.message(ctx, seq, n, kindSendImm, func() error {
		return d.from.qp.SendWithImmediate(ctx, loadImm(d.id, seq, kindSendImm), d.src.SGE(0, n))
	})
}

// message posts a receive, fills the source with the pattern of kind,
// calls send and verifies the receive's completion and bytes.
func (d *netnsDir) message(ctx context.Context, seq, n int, kind byte, send func() error) error {
	if err := d.to.qp.PostRecv(iwarp.RecvWR{ID: uint64(seq), SGL: []iwarp.SGE{d.recv.SGE(0, d.span)}}); err != nil {
		return err
	}
	fillPattern(d.sbuf.bytes()[:n], d.id, seq, kind)
	if err := send(); err != nil {
		return err
	}
	c, err := d.to.cq.Next(ctx)
	if err != nil {
		return err
	}
	imm := kind == kindSendImm
	if c.Status != iwarp.StatusSuccess || c.Op != iwarp.OpRecv || c.ID != uint64(seq) || c.Len != n ||
		c.HasImmediate != imm || (imm && c.Immediate != loadImm(d.id, seq, kind)) {
		return fmt.Errorf("receive completion %+v", c)
	}
	d.bytesMoved += int64(n)
	return verifyPattern(d.rbuf.bytes()[:n], d.id, seq, kind)
}

// writeImm writes a pattern with Write with Immediate and checks it at the
// target once the receive completed.
func (d *netnsDir) writeImm(ctx context.Context, seq, n int) error {
	if err := d.to.qp.PostRecv(iwarp.RecvWR{ID: uint64(seq), SGL: []iwarp.SGE{d.recv.SGE(0, 8)}}); err != nil {
		return err
	}
	fillPattern(d.sbuf.bytes()[:n], d.id, seq, kindWImm)
	remote, _ := d.target.RemoteSlice(d.span, n)
	imm := loadImm(d.id, seq, kindWImm)
	if err := d.from.qp.WriteWithImmediate(ctx, remote, imm, d.src.SGE(0, n)); err != nil {
		return err
	}
	c, err := d.to.cq.Next(ctx)
	if err != nil {
		return err
	}
	if c.Status != iwarp.StatusSuccess || c.Op != iwarp.OpRecv || !c.HasImmediate || c.Immediate != imm {
		return fmt.Errorf("receive completion %+v", c)
	}
	d.bytesMoved += int64(n)
	return verifyPattern(d.tbuf.bytes()[d.span:d.span+n], d.id, seq, kindWImm)
}

// atomics does n FetchAdds and n CompareSwap increments on two words of
// the target: each FetchAdd must return the count so far (this direction
// is their only user), each CompareSwap must succeed.
func (d *netnsDir) atomics(ctx context.Context, n int) error {
	fa, _ := d.target.RemoteSlice(2*d.span, 8)
	cs, _ := d.target.RemoteSlice(2*d.span+8, 8)
	for k := range n {
		old, err := d.from.qp.FetchAdd(ctx, fa, 3)
		if err != nil || old != uint64(3*k) {
			return fmt.Errorf("FetchAdd %d returned %d, %v; want %d", k, old, err, 3*k)
		}
		old, err = d.from.qp.CompareSwap(ctx, cs, uint64(k), uint64(k+1))
		if err != nil || old != uint64(k) {
			return fmt.Errorf("CompareSwap %d returned %d, %v; want %d", k, old, err, k)
		}
		d.atomicsDone += 2
	}
	v1, _ := d.target.AtomicLoad(2 * d.span)
	v2, _ := d.target.AtomicLoad(2*d.span + 8)
	if v1 != uint64(3*n) || v2 != uint64(n) {
		return fmt.Errorf("counters %d and %d, want %d and %d", v1, v2, 3*n, n)
	}
	return nil
}

// verifyPattern is badPattern as an error.
func verifyPattern(p []byte, qp, seq int, kind byte) error {
	if at := badPattern(p, qp, seq, kind); at >= 0 {
		return fmt.Errorf("byte %d of %d wrong", at, len(p))
	}
	return nil
}
