package perftest

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/goiwarp/iwarp"
)

// ib_send_bw over iWARP, which has no receiver-not-ready retry, uses
// perftest's credit scheme: the server RDMA-Writes the number of Sends it
// has received so far, a 32-bit word in its host byte order
// (little-endian on the machines perftest runs on), into a counter the
// client advertised in its QP record; the client sends only while it is
// less than the server's receive depth ahead of that count. perftest's
// server writes every rx_depth/3 receives; ours writes after every batch
// of receive completions (at most one credit Write per completion poll),
// which a perftest client accepts whatever its receive depth.

// rxDepth is perftest's default receive depth (capped at the
// iterations, then rounded up to even): the server keeps that many
// receives posted, so our client has at most that many Sends not yet
// counted by the server's credit (perftest's own client one fewer).
const rxDepth = 512

// credits returns the count the server last wrote into our counter.
func (d *dataQP) credits() (uint32, error) {
	x, err := d.credit.AtomicLoad(0)
	if err != nil {
		return 0, err
	}
	var w [8]byte
	binary.NativeEndian.PutUint64(w[:], x)
	return binary.LittleEndian.Uint32(w[:4]), nil
}

// sendBW is the client of ib_send_bw: iters Sends of size bytes, txDepth
// in flight, never more than the server's receive depth ahead of its
// credit.
func (d *dataQP) sendBW(ctx context.Context) (*result, error) {
	iters, depth := d.cfg.Iters, max(1, min(d.cfg.TxDepth, d.cfg.Iters))
	window := uint32(min(rxDepth, iters))
	done := make([]time.Duration, iters)
	wrs := make([]iwarp.SendWR, 0, depth)
	comps := make([]iwarp.Completion, depth)
	posted, completed, stalls := 0, 0, 0
	var credit uint32 // the server's count as last read
	start := time.Now()
	for completed < iters {
		if posted < iters && uint32(posted+1)-credit > window {
			// Only then look at the counter: a test within one window
			// never reads memory the peer writes.
			var err error
			if credit, err = d.credits(); err != nil {
				return nil, err
			}
		}
		wrs = wrs[:0]
		for posted < iters && posted-completed < depth && uint32(posted+1)-credit <= window {
			sge := d.src.SGE((posted%d.slots)*d.slot, d.cfg.Size)
			wrs = append(wrs, iwarp.SendWR{ID: uint64(posted), Op: iwarp.OpSend, Flags: iwarp.Signaled, SGL: []iwarp.SGE{sge}})
			posted++
		}
		if len(wrs) > 0 {
			if err := d.qp.PostSend(wrs...); err != nil {
				return nil, err
			}
		}
		if posted == completed && posted < iters {
			// Waiting for the server's credit.
			stalls++
			if err := d.waitCredit(ctx, credit); err != nil {
				return nil, err
			}
			continue
		}
		var err error
		if completed, err = d.completeSends(ctx, comps, done, completed, start); err != nil {
			return nil, err
		}
	}
	res := &result{elapsed: done[iters-1], report: measureBW(d.cfg.Size, done, depth)}
	res.verified = fmt.Sprintf("%d Sends of %d bytes completed, within the server's credit (%d waits for credit)", iters, d.cfg.Size, stalls)
	return res, d.endErr()
}

// waitCredit spins until the credit counter moves from old.
func (d *dataQP) waitCredit(ctx context.Context, old uint32) error {
	for spins := 0; ; spins++ {
		c, err := d.credits()
		if err != nil {
			return err
		}
		if c != old {
			return nil
		}
		if err := backoff(ctx, d.qp, spins); err != nil {
			return fmt.Errorf("waiting for the server's credit (%d Sends received): %w", old, err)
		}
	}
}

// recvBW is the server of ib_send_bw: it receives iters Sends of size
// bytes, re-posting receives, and writes its count of received Sends into
// the client's credit counter (rem).
func (d *dataQP) recvBW(ctx context.Context, rem record) (*result, error) {
	iters := d.cfg.Iters
	remote := iwarp.RemoteBuffer{STag: rem.RKey, TO: rem.VAddr, Len: 4}
	ctrl := d.src.Bytes()[:4]
	maxCredits := max(1, min(d.cfg.TxDepth, iters)) // the send queue's depth
	done := make([]time.Duration, iters)
	comps := make([]iwarp.Completion, 64)
	received, credited, inFlight, creditWrites := 0, 0, 0, 0
	var start time.Time
	for received < iters || inFlight > 0 {
		n, err := d.poll(ctx, comps)
		if err != nil {
			return nil, fmt.Errorf("after %d Sends received: %w", received, err)
		}
		for _, c := range comps[:n] {
			if c.Status != iwarp.StatusSuccess {
				return nil, fmt.Errorf("%v %d: %v: %w", c.Op, c.ID, c.Status, c.Err)
			}
			if c.Op != iwarp.OpRecv {
				inFlight-- // a credit Write
				continue
			}
			if c.Len != d.cfg.Size {
				return nil, fmt.Errorf("receive %d: %d bytes, want %d (run both sides with the same -size)", received+1, c.Len, d.cfg.Size)
			}
			if received == 0 {
				start = time.Now()
			}
			done[received] = time.Since(start)
			received++
			if received+d.recvs <= iters {
				if err := d.postRecv(received - 1 + d.recvs); err != nil {
					return nil, err
				}
			}
		}
		if credited < received && inFlight < maxCredits {
			binary.LittleEndian.PutUint32(ctrl, uint32(received))
			wr := iwarp.SendWR{Op: iwarp.OpWrite, Flags: iwarp.Signaled | iwarp.Inline, SGL: []iwarp.SGE{d.src.SGE(0, 4)}, Remote: remote}
			if err := d.qp.PostSend(wr); err != nil {
				return nil, fmt.Errorf("credit Write: %w", err)
			}
			credited = received
			inFlight++
			creditWrites++
		}
	}
	res := &result{elapsed: done[iters-1], report: measureBW(d.cfg.Size, done, d.recvs)}
	res.verified = fmt.Sprintf("%d Sends of %d bytes received, %d credit Writes sent", iters, d.cfg.Size, creditWrites)
	return res, d.endErr()
}
