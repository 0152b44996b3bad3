package perftest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/bench"
	"github.com/goiwarp/iwarp/internal/wire"
)

// dataQP is one side's data QP of a perftest-compatible test and its
// memory.
type dataQP struct {
	cfg    *Config
	client bool
	cq     *iwarp.CQ
	qp     *iwarp.QP
	// buf is what the peer targets (Writes, Reads) or our receives land
	// in; src is what our Writes and Sends carry (a known pattern) and
	// what our Reads fill.
	buf, src *iwarp.MR
	// credit is, in ib_send_bw, the 4-byte counter of receives the server
	// writes into the client (see credit.go).
	credit *iwarp.MR
	slot   int // a message's place in the cycle buffer: size rounded up to the cache line
	slots  int // places in the cycle buffer
	recvs  int // receives kept posted (Send tests)
	psn    uint32
}

// result is what a test measured and checked.
type result struct {
	report   bwReport       // bandwidth (the client's, or the one it sent us)
	lat      *bench.Latency // latency tests: per perftest, half the round trip for write and send, the round trip for read
	verified string         // what this side checked of the data
	elapsed  time.Duration
}

const canary = 0xA5 // fills memory a peer is to overwrite

func newDataQP(pd *iwarp.PD, cfg *Config, client bool, cycle, cache int) (*dataQP, error) {
	d := &dataQP{cfg: cfg, client: client, psn: randPSN()}
	// perftest cycles bandwidth tests' addresses through the cycle
	// buffer in steps of the size rounded up to the cache line, unless the
	// size is above half the cycle buffer; the region it may target is
	// max(size, cycle buffer) bytes.
	d.slot = (cfg.Size + cache - 1) / cache * cache
	d.slots = 1
	if !cfg.Lat && cfg.Size <= cycle/2 {
		d.slots = cycle / d.slot
	}
	depth := 4
	if !cfg.Lat {
		depth = max(1, min(cfg.TxDepth, cfg.Iters))
	}
	if cfg.Op == Send {
		d.recvs = min(cfg.Iters, maxRecvs)
		if cfg.Lat {
			d.recvs = min(cfg.Iters, 16)
		}
	}
	ird, ord := 1, 1
	if cfg.Op == Read {
		ird, ord = outReads, outReads
	}
	var err error
	if d.cq, err = pd.Device().NewCQ(depth+1+max(d.recvs, 1), nil); err != nil {
		return nil, err
	}
	qcfg := &iwarp.QPConfig{SendCQ: d.cq, RecvCQ: d.cq, SendQueueDepth: depth + 1, RecvQueueDepth: max(d.recvs, 1), MaxSGE: 1, IRD: ird, ORD: ord}
	if d.qp, err = pd.NewQP(qcfg); err != nil {
		return nil, err
	}
	n := (max(d.slots*d.slot, cycle, cfg.Size) + 7) &^ 7
	pattern := make([]byte, n)
	for i := range pattern {
		pattern[i] = byte(i*7 + 1)
	}
	if cfg.Lat && cfg.Op == Write {
		clear(pattern) // the counter in the last byte is the message
	}
	// buf starts as the canary where the peer is to write (or our Reads to
	// place), as the pattern where the peer reads (a Read test's server).
	target := make([]byte, n)
	for i := range target {
		target[i] = canary
	}
	if cfg.Op == Read && !client {
		copy(target, pattern)
	}
	access := iwarp.AccessLocalWrite | iwarp.AccessRemoteWrite | iwarp.AccessRemoteRead
	if d.buf, err = pd.RegisterMemory(target, access); err != nil {
		return nil, err
	}
	if d.src, err = pd.RegisterMemory(pattern, iwarp.AccessLocalWrite); err != nil {
		return nil, err
	}
	if cfg.Op == Send && !cfg.Lat && client {
		if d.credit, err = pd.RegisterMemory(make([]byte, 8), iwarp.AccessLocalWrite|iwarp.AccessRemoteWrite); err != nil {
			return nil, err
		}
	}
	for i := 0; i < d.recvs; i++ {
		if err := d.postRecv(i); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// maxRecvs bounds the receives an ib_send_bw side keeps posted;
// outReads is the IRD and ORD of Read tests (siw's maximum, and what
// perftest asks for over siw).
const (
	maxRecvs = 1024
	outReads = 128
)

func (d *dataQP) postRecv(i int) error {
	off := (i % d.slots) * d.slot
	return d.qp.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{d.buf.SGE(off, d.cfg.Size)}})
}

// ownRecord is this side's QP record: the buffer the peer targets (in
// ib_send_bw, the client's credit counter).
func (d *dataQP) ownRecord() *record {
	r := &record{OutReads: 1, QPN: 1, PSN: d.psn, RKey: d.buf.STag(), VAddr: d.buf.TO()}
	if d.cfg.Op == Read {
		r.OutReads = outReads
	}
	if d.credit != nil {
		r.RKey, r.VAddr = d.credit.STag(), d.credit.TO()
	}
	return r
}

func (d *dataQP) close() {
	d.qp.Close()
	d.cq.Close()
}

// run is the client's side of the test against the peer's record rem.
func (d *dataQP) run(ctx context.Context, rem record) (*result, error) {
	switch {
	case d.cfg.Lat && d.cfg.Op == Write:
		return d.writeLat(ctx, rem)
	case d.cfg.Lat && d.cfg.Op == Read:
		return d.readLat(ctx, rem)
	case d.cfg.Lat:
		return d.sendLat(ctx)
	case d.cfg.Op == Send:
		return d.sendBW(ctx)
	}
	return d.oneSidedBW(ctx, rem)
}

// serve is the server's side; end runs the exchange that tells the server
// the client has finished (perftest's record after the test).
func (d *dataQP) serve(ctx context.Context, rem record, end func(context.Context) error) (*result, error) {
	var res *result
	var err error
	switch {
	case d.cfg.Lat && d.cfg.Op == Write:
		res, err = d.writeLat(ctx, rem)
	case d.cfg.Lat && d.cfg.Op == Send:
		res, err = d.sendLat(ctx)
	case d.cfg.Op == Send:
		res, err = d.recvBW(ctx, rem)
	default:
		res = &result{}
	}
	if err != nil {
		return nil, err
	}
	return res, end(ctx)
}

// verify is the server's check of what the client did to it in the
// one-sided tests (run after the client's report has been compared with
// our parameters, so that a mismatch is said as such, not waited on).
func (d *dataQP) verify(ctx context.Context, res *result) error {
	var err error
	switch {
	case d.cfg.Op == Write && !d.cfg.Lat:
		res.verified, err = d.checkWrites(ctx)
	case d.cfg.Op == Read:
		res.verified, err = d.checkReads(ctx)
	}
	return err
}

// remote is the peer's buffer at message i of a bandwidth test (perftest
// cycles through its cycle buffer in cache-line-rounded steps).
func (d *dataQP) remote(rem record, i int) iwarp.RemoteBuffer {
	return iwarp.RemoteBuffer{STag: rem.RKey, TO: rem.VAddr + uint64((i%d.slots)*d.slot), Len: uint32(d.cfg.Size)}
}

// oneSidedBW is the client of ib_write_bw and ib_read_bw: iters Writes
// (Reads) of size bytes, txDepth in flight, to (from) the server's
// buffer.
func (d *dataQP) oneSidedBW(ctx context.Context, rem record) (*result, error) {
	op := iwarp.OpWrite
	if d.cfg.Op == Read {
		op = iwarp.OpRead
	}
	iters, depth := d.cfg.Iters, max(1, min(d.cfg.TxDepth, d.cfg.Iters))
	done := make([]time.Duration, iters)
	wrs := make([]iwarp.SendWR, 0, depth)
	comps := make([]iwarp.Completion, depth)
	posted, completed := 0, 0
	start := time.Now()
	for completed < iters {
		wrs = wrs[:0]
		for posted < iters && posted-completed < depth {
			local := d.src.SGE((posted%d.slots)*d.slot, d.cfg.Size)
			if op == iwarp.OpRead {
				local = d.buf.SGE((posted%d.slots)*d.slot, d.cfg.Size)
			}
			wrs = append(wrs, iwarp.SendWR{ID: uint64(posted), Op: op, Flags: iwarp.Signaled, SGL: []iwarp.SGE{local}, Remote: d.remote(rem, posted)})
			posted++
		}
		if len(wrs) > 0 {
			if err := d.qp.PostSend(wrs...); err != nil {
				return nil, err
			}
		}
		var err error
		if completed, err = d.completeSends(ctx, comps, done, completed, start); err != nil {
			return nil, err
		}
	}
	res := &result{elapsed: done[iters-1]}
	res.report = measureBW(d.cfg.Size, done, depth)
	res.verified = fmt.Sprintf("%d %vs of %d bytes completed", iters, op, d.cfg.Size)
	if op == iwarp.OpRead {
		if err := d.checkSlotsWritten(min(iters, d.slots)); err != nil {
			return nil, fmt.Errorf("after the Reads: %w", err)
		}
		res.verified += fmt.Sprintf(", all %d slots they targeted filled", min(iters, d.slots))
	}
	return res, d.endErr()
}

// completeSends waits for send-queue completions, records the time of
// each in done from index completed on, and returns the new count.
func (d *dataQP) completeSends(ctx context.Context, comps []iwarp.Completion, done []time.Duration, completed int, start time.Time) (int, error) {
	n, err := d.poll(ctx, comps)
	if err != nil {
		return completed, err
	}
	for _, c := range comps[:n] {
		if c.Status != iwarp.StatusSuccess {
			return completed, fmt.Errorf("%v %d: %v: %w", c.Op, c.ID, c.Status, c.Err)
		}
		done[completed] = time.Since(start)
		completed++
	}
	return completed, nil
}

// checkSlotsWritten checks that none of the first slots of buf still
// holds only our canary: each was written by the peer's Writes or filled by
// our Reads (whose source, a perftest buffer of random bytes or our
// server's pattern, is not the canary).
func (d *dataQP) checkSlotsWritten(slots int) error {
	b := d.buf.Bytes()
	for k := 0; k < slots; k++ {
		if allBytes(b[k*d.slot:k*d.slot+d.cfg.Size], canary) {
			return fmt.Errorf("slot %d of the buffer was not written", k)
		}
	}
	return nil
}

func allBytes(b []byte, v byte) bool {
	for _, c := range b {
		if c != v {
			return false
		}
	}
	return true
}

// poll returns at least one completion, waiting for it.
func (d *dataQP) poll(ctx context.Context, comps []iwarp.Completion) (int, error) {
	for {
		if n := d.cq.Poll(comps); n > 0 {
			return n, nil
		}
		if err := d.qp.Err(); err != nil {
			return 0, err
		}
		if err := d.cq.Wait(ctx); err != nil {
			if qerr := d.qp.Err(); qerr != nil {
				return 0, qerr
			}
			return 0, err
		}
	}
}

// measureBW computes perftest's three numbers from the completion times:
// the average bandwidth and message rate over the test, and the peak
// bandwidth over any window of a tenth of the completions (at least
// depth). perftest's own peak, from single work requests, is dominated by
// local completion bursts; a window of many completions reflects the
// stream.
func measureBW(size int, done []time.Duration, depth int) bwReport {
	n := len(done)
	r := bwReport{Size: uint64(size), Iters: uint64(n)}
	total := done[n-1].Seconds()
	if total <= 0 {
		return r
	}
	r.AvgMBps = float64(n) * float64(size) / total / (1 << 20)
	r.MsgRateMpps = float64(n) / total / 1e6
	w := max(1, min(max(depth, n/10), n))
	r.PeakMBps = r.AvgMBps
	for i := w - 1; i < n; i++ {
		var t0 time.Duration
		if i >= w {
			t0 = done[i-w]
		}
		if dt := (done[i] - t0).Seconds(); dt > 0 {
			r.PeakMBps = max(r.PeakMBps, float64(w)*float64(size)/dt/(1<<20))
		}
	}
	return r
}

// checkWrites (ib_write_bw server) waits until the client's payload has
// all arrived and checks that every slot it targeted was overwritten.
func (d *dataQP) checkWrites(ctx context.Context) (string, error) {
	want := uint64(d.cfg.Iters) * uint64(d.cfg.Size)
	if err := d.waitStats(ctx, func(s iwarp.QPStats) bool {
		return s.BytesReceived-wire.TaggedHdrLen*s.FPDUsReceived >= want
	}); err != nil {
		return "", fmt.Errorf("waiting for %d bytes of Writes: %w", want, err)
	}
	if err := d.checkSlotsWritten(min(d.cfg.Iters, d.slots)); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d bytes of Writes placed, all %d slots written", want, min(d.cfg.Iters, d.slots)), nil
}

// checkReads (ib_read_bw and ib_read_lat server) waits until the client's
// Read Requests have all arrived.
func (d *dataQP) checkReads(ctx context.Context) (string, error) {
	want := uint64(d.cfg.Iters)
	if err := d.waitStats(ctx, func(s iwarp.QPStats) bool { return s.FPDUsReceived >= want }); err != nil {
		return "", fmt.Errorf("waiting for %d Read Requests: %w", want, err)
	}
	if got := d.qp.Stats().FPDUsReceived; got != want {
		return "", fmt.Errorf("%d Read Requests arrived, want %d", got, want)
	}
	return fmt.Sprintf("%d Read Requests answered", want), nil
}

// waitStats polls the QP's counters until ok (they are updated as FPDUs
// arrive; the client's last message on the other connection may overtake
// the data).
func (d *dataQP) waitStats(ctx context.Context, ok func(iwarp.QPStats) bool) error {
	for !ok(d.qp.Stats()) {
		if err := d.qp.Err(); err != nil && !errors.Is(err, iwarp.ErrPeerDisconnected) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// writeLat is both sides of ib_write_lat: the server writes first; each
// side then waits until the last byte of its buffer holds the counter of
// the peer's latest Write and writes its own, counters 1, 2, ... (perftest
// polls memory; so do we, through MR.AtomicLoad on the aligned word).
func (d *dataQP) writeLat(ctx context.Context, rem record) (*result, error) {
	iters, size := d.cfg.Iters, d.cfg.Size
	remote := iwarp.RemoteBuffer{STag: rem.RKey, TO: rem.VAddr, Len: uint32(size)}
	src := d.src.Bytes()
	samples := make([]time.Duration, 0, iters)
	start := time.Now()
	last := start
	for i := 1; i <= iters; i++ {
		if d.client || i > 1 {
			if err := d.waitLastByte(ctx, byte(i-boolInt(!d.client))); err != nil {
				return nil, fmt.Errorf("waiting for the peer's Write %d: %w", i-boolInt(!d.client), err)
			}
			now := time.Now()
			if d.client && i > 1 || !d.client {
				samples = append(samples, now.Sub(last)/2)
			}
			last = now
		}
		src[size-1] = byte(i)
		if err := d.qp.Write(ctx, remote, d.src.SGE(0, size)); err != nil {
			return nil, fmt.Errorf("RDMA Write %d: %w", i, err)
		}
	}
	if !d.client {
		if err := d.waitLastByte(ctx, byte(iters)); err != nil {
			return nil, fmt.Errorf("waiting for the peer's Write %d: %w", iters, err)
		}
		samples = append(samples, time.Since(last)/2)
	}
	return &result{lat: bench.Summarize(samples), elapsed: time.Since(start),
		verified: fmt.Sprintf("%d Writes arrived with counters 1..%d in order", iters, iters)}, d.endErr()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// waitLastByte spins until the last byte of the message in buf is v.
func (d *dataQP) waitLastByte(ctx context.Context, v byte) error {
	off := d.cfg.Size - 1
	word := off &^ 7
	var w [8]byte
	for spins := 0; ; spins++ {
		x, err := d.buf.AtomicLoad(word)
		if err != nil {
			return err
		}
		binary.NativeEndian.PutUint64(w[:], x)
		if w[off-word] == v {
			return nil
		}
		if err := backoff(ctx, d.qp, spins); err != nil {
			return err
		}
	}
}

// backoff is one turn of a memory-polling wait: a few turns that only
// yield, then short sleeps. A goroutine that only yields keeps its P busy,
// so the runtime's network poller (which makes the QP's receive goroutine
// runnable when the peer's Write arrives) runs only from sysmon, every
// few milliseconds; a sleeping one lets the P block in the poller, which
// the arriving FPDU wakes at once.
func backoff(ctx context.Context, qp *iwarp.QP, spins int) error {
	if spins < 16 {
		runtime.Gosched()
		return nil
	}
	if spins%64 == 0 {
		if err := qp.Err(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	time.Sleep(5 * time.Microsecond)
	return nil
}

// readLat is the client of ib_read_lat: iters Reads, one at a time, of
// the server's buffer.
func (d *dataQP) readLat(ctx context.Context, rem record) (*result, error) {
	remote := iwarp.RemoteBuffer{STag: rem.RKey, TO: rem.VAddr, Len: uint32(d.cfg.Size)}
	samples := make([]time.Duration, 0, d.cfg.Iters)
	start := time.Now()
	for i := 0; i < d.cfg.Iters; i++ {
		t := time.Now()
		if err := d.qp.Read(ctx, remote, d.buf.SGE(0, d.cfg.Size)); err != nil {
			return nil, fmt.Errorf("RDMA Read %d: %w", i+1, err)
		}
		samples = append(samples, time.Since(t))
	}
	return &result{lat: bench.Summarize(samples), elapsed: time.Since(start),
		verified: fmt.Sprintf("%d Reads of %d bytes completed", d.cfg.Iters, d.cfg.Size)}, d.endErr()
}

// sendLat is both sides of ib_send_lat: the client sends first, each side
// answers every message it receives (until iters each way).
func (d *dataQP) sendLat(ctx context.Context) (*result, error) {
	iters, size := d.cfg.Iters, d.cfg.Size
	samples := make([]time.Duration, 0, iters)
	start := time.Now()
	last := start
	for i := 1; i <= iters; i++ {
		if d.client {
			if err := d.qp.Send(ctx, d.src.SGE(0, size)); err != nil {
				return nil, fmt.Errorf("send %d: %w", i, err)
			}
		}
		if err := d.recvOne(ctx, i); err != nil {
			return nil, err
		}
		now := time.Now()
		samples = append(samples, now.Sub(last)/2)
		last = now
		if !d.client {
			if err := d.qp.Send(ctx, d.src.SGE(0, size)); err != nil {
				return nil, fmt.Errorf("send %d: %w", i, err)
			}
		}
	}
	return &result{lat: bench.Summarize(samples), elapsed: time.Since(start),
		verified: fmt.Sprintf("%d messages of %d bytes received", iters, size)}, d.endErr()
}

// recvOne waits for receive i (1-based) and re-posts it while more are
// to come.
func (d *dataQP) recvOne(ctx context.Context, i int) error {
	var c [1]iwarp.Completion
	if _, err := d.poll(ctx, c[:]); err != nil {
		return fmt.Errorf("receive %d: %w", i, err)
	}
	if c[0].Status != iwarp.StatusSuccess || c[0].Op != iwarp.OpRecv {
		return fmt.Errorf("receive %d: %v %v: %w", i, c[0].Op, c[0].Status, c[0].Err)
	}
	if c[0].Len != d.cfg.Size {
		return fmt.Errorf("receive %d: %d bytes, want %d (run both sides with the same -size)", i, c[0].Len, d.cfg.Size)
	}
	if i+d.recvs <= d.cfg.Iters {
		return d.postRecv(i - 1 + d.recvs)
	}
	return nil
}

// endErr is the QP's error at the end of this side's test: none if the
// peer has only closed the connection (a perftest peer closes as soon as
// its own loop is done, possibly before ours has looked).
func (d *dataQP) endErr() error {
	if err := d.qp.Err(); err != nil && !errPeerGone(err) {
		return err
	}
	return nil
}
