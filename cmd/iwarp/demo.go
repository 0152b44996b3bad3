package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
	"unsafe"

	"github.com/goiwarp/iwarp"
)

func init() {
	register(&command{
		name:  "demo",
		short: "run every operation between a responder and an initiator on loopback, verifying the data",
		run:   runDemo,
	})
}

// demoSide is one end of the demo connection.
type demoSide struct {
	pd *iwarp.PD
	cq *iwarp.CQ
	qp *iwarp.QP
}

func newDemoSide(dev *iwarp.Device) (*demoSide, error) {
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, err
	}
	cq, err := dev.NewCQ(128, nil)
	if err != nil {
		return nil, err
	}
	qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 32, RecvQueueDepth: 32})
	if err != nil {
		return nil, err
	}
	return &demoSide{pd: pd, cq: cq, qp: qp}, nil
}

func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "loopback address for the responder")
	noCRC := fs.Bool("nocrc", false, "do not ask for MPA CRCs")
	maxSize := fs.Int("max", 16<<20, "largest message size")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := demo(stdout, *addr, !*noCRC, *maxSize); err != nil {
		fmt.Fprintf(stderr, "iwarp demo: %v\n", err)
		return 1
	}
	return 0
}

func demo(w io.Writer, addr string, crc bool, maxSize int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	resp, err := newDemoSide(dev)
	if err != nil {
		return err
	}
	init, err := newDemoSide(dev)
	if err != nil {
		return err
	}
	ln, err := iwarp.Listen("tcp", addr, nil)
	if err != nil {
		return err
	}
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			accepted <- err
			return
		}
		accepted <- req.Accept(ctx, resp.qp, &iwarp.ConnOptions{NoCRC: !crc, PrivateData: []byte("iwarp demo responder")})
	}()
	if err := init.qp.Connect(ctx, "tcp", ln.Addr().String(), &iwarp.ConnOptions{NoCRC: !crc, PrivateData: []byte("iwarp demo initiator")}); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if err := <-accepted; err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	defer init.qp.Close()
	defer resp.qp.Close()
	a := init.qp.Attributes()
	fmt.Fprintf(w, "connected %s -> %s: MPA rev %d, CRC %v, P2P %v (RTR %s), IRD/ORD %d/%d, MULPDU %d, extensions RFC7306=%v V2=%v\n",
		"initiator", ln.Addr(), a.MPARevision, a.CRC, a.P2P, a.RTR, a.IRD, a.ORD, a.MULPDU, a.RFC7306, a.V2)
	fmt.Fprintf(w, "private data: initiator saw %q, responder saw %q\n\n", a.PeerPrivateData, resp.qp.Attributes().PeerPrivateData)

	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tsize\tresult\ttime\tthroughput\t")
	failures := 0
	report := func(op string, size int, d time.Duration, err error) {
		res := "verified"
		if err != nil {
			res = "FAILED: " + err.Error()
			failures++
		}
		tput := "-"
		if size >= 4096 && d > 0 {
			tput = fmt.Sprintf("%.0f MB/s", float64(size)/d.Seconds()/1e6)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%v\t%s\t\n", op, size, res, d.Round(time.Microsecond), tput)
	}
	sizes := []int{0, 1, 4095, 65536, 1 << 20}
	if maxSize > 1<<20 {
		sizes = append(sizes, maxSize)
	}
	for _, n := range sizes {
		d, err := demoSend(ctx, init, resp, n)
		report("Send", n, d, err)
	}
	for _, n := range sizes {
		d, err := demoWrite(ctx, init, resp, n)
		report("RDMA Write", n, d, err)
	}
	for _, n := range sizes {
		d, err := demoRead(ctx, init, resp, n)
		report("RDMA Read", n, d, err)
	}
	if a.RFC7306 {
		d, n, err := demoAtomics(ctx, init, resp)
		report("FetchAdd/CompareSwap (RFC 7306)", n, d, err)
		d, err = demoImmediate(ctx, init, resp)
		report("Immediate Data (RFC 7306)", 8, d, err)
		for _, n := range []int{0, 4096, 1 << 20} {
			d, err := demoWriteImm(ctx, init, resp, n)
			report("Write with Immediate", n, d, err)
		}
	}
	if a.V2 {
		for _, n := range []int{0, 4096, 1 << 20} {
			d, err := demoSendImm(ctx, init, resp, n)
			report("Send with Immediate (V2)", n, d, err)
		}
		for _, n := range []int{0, 4096, 1 << 20} {
			d, err := demoReadV2(ctx, init, resp, n)
			report("RDMA Read V2 (2 SGEs)", n, d, err)
		}
	}
	tw.Flush()
	if err := init.qp.Disconnect(ctx); err != nil {
		return fmt.Errorf("disconnect: %w", err)
	}
	<-resp.qp.Done()
	fmt.Fprintf(w, "\ndisconnected in order; responder saw: %v\n", resp.qp.Err())
	st := dev.Stats()
	fmt.Fprintf(w, "device counters: %d FPDUs / %d bytes sent, %d FPDUs / %d bytes received, %d CRC errors, %d Terminates\n",
		st.FPDUsSent, st.BytesSent, st.FPDUsReceived, st.BytesReceived, st.CRCErrors, len(st.Terminates))
	if failures > 0 {
		return fmt.Errorf("%d operations failed", failures)
	}
	fmt.Fprintln(w, "all operations verified")
	return nil
}

// fill writes bytes that encode their own offset.
func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i) ^ byte(i>>8) ^ byte(i>>16) ^ seed
	}
}

// regOrEmpty registers n bytes (at least 1: a region cannot be empty),
// filled with fill(seed) first when seed is not 0. Memory a peer reads must
// be written before it is registered, or before some other synchronisation
// with the QP (docs/semantics.md).
func regOrEmpty(pd *iwarp.PD, n int, acc iwarp.Access, seed byte) (*iwarp.MR, []byte, error) {
	buf := make([]byte, max(n, 1))
	if seed != 0 {
		fill(buf[:n], seed)
	}
	mr, err := pd.RegisterMemory(buf, acc)
	return mr, buf[:n], err
}

// demoSend sends n bytes; the responder verifies what its receive got.
func demoSend(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	rmr, rbuf, err := regOrEmpty(to.pd, n, iwarp.AccessLocalWrite, 0)
	if err != nil {
		return 0, err
	}
	defer rmr.Deregister(ctx)
	smr, sbuf, err := regOrEmpty(from.pd, n, 0, 0x11)
	if err != nil {
		return 0, err
	}
	defer smr.Deregister(ctx)
	if err := to.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{rmr.SGE(0, n)}}); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := from.qp.Send(ctx, smr.SGE(0, n)); err != nil {
		return 0, err
	}
	c, err := to.cq.Next(ctx)
	d := time.Since(start)
	if err != nil {
		return d, err
	}
	if c.Status != iwarp.StatusSuccess || c.Len != n {
		return d, fmt.Errorf("receive completed %v with %d bytes", c.Status, c.Len)
	}
	if !bytes.Equal(rbuf, sbuf) {
		return d, fmt.Errorf("received bytes differ")
	}
	return d, nil
}

// demoWrite writes n bytes, then Sends a note: the note's arrival at the
// responder proves the Write was placed (RFC 5040 §5.5), and only then does
// the responder look at its memory.
func demoWrite(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	tmr, tbuf, err := regOrEmpty(to.pd, n, iwarp.AccessRemoteWrite, 0)
	if err != nil {
		return 0, err
	}
	defer tmr.Deregister(ctx)
	smr, sbuf, err := regOrEmpty(from.pd, n, 0, 0x22)
	if err != nil {
		return 0, err
	}
	defer smr.Deregister(ctx)
	nmr, _, err := regOrEmpty(to.pd, 0, iwarp.AccessLocalWrite, 0)
	if err != nil {
		return 0, err
	}
	defer nmr.Deregister(ctx)
	if err := to.qp.PostRecv(iwarp.RecvWR{ID: 2, SGL: []iwarp.SGE{nmr.SGE(0, 0)}}); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := from.qp.Write(ctx, tmr.Remote(), smr.SGE(0, n)); err != nil {
		return 0, err
	}
	if err := from.qp.Send(ctx); err != nil {
		return 0, err
	}
	c, err := to.cq.Next(ctx)
	d := time.Since(start)
	if err != nil {
		return d, err
	}
	if c.Status != iwarp.StatusSuccess {
		return d, fmt.Errorf("note completed %v", c.Status)
	}
	if !bytes.Equal(tbuf, sbuf) {
		return d, fmt.Errorf("written bytes differ")
	}
	return d, nil
}

// demoRead reads n bytes of the responder's memory.
func demoRead(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	smr, sbuf, err := regOrEmpty(to.pd, n, iwarp.AccessRemoteRead, 0x33)
	if err != nil {
		return 0, err
	}
	defer smr.Deregister(ctx)
	dmr, dbuf, err := regOrEmpty(from.pd, n, iwarp.AccessLocalWrite, 0)
	if err != nil {
		return 0, err
	}
	defer dmr.Deregister(ctx)
	start := time.Now()
	if err := from.qp.Read(ctx, dmr.SGE(0, n), smr.Remote()); err != nil {
		return 0, err
	}
	d := time.Since(start)
	if !bytes.Equal(dbuf, sbuf) {
		return d, fmt.Errorf("read bytes differ")
	}
	return d, nil
}

// alignedBuf returns n bytes at an 8-byte aligned address, as remote
// atomics require.
func alignedBuf(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)
}

// demoAtomics runs FetchAdds (plain and masked) and CompareSwaps against a
// counter the responder exposes, checking every returned original value and
// the final memory. It returns the number of atomics done.
func demoAtomics(ctx context.Context, from, to *demoSide) (time.Duration, int, error) {
	mr, err := to.pd.RegisterMemory(alignedBuf(16), iwarp.AccessRemoteAtomic)
	if err != nil {
		return 0, 0, err
	}
	defer mr.Deregister(ctx)
	word0, _ := mr.RemoteSlice(0, 8)
	word1, _ := mr.RemoteSlice(8, 8)
	start := time.Now()
	const adds = 100
	for i := 0; i < adds; i++ {
		if orig, err := from.qp.FetchAdd(ctx, word0, 3); err != nil || orig != uint64(3*i) {
			return time.Since(start), i, fmt.Errorf("FetchAdd %d returned %d (%v)", i, orig, err)
		}
	}
	// Masked FetchAdd: two 32-bit fields, the carry out of the low one is
	// dropped (Add Mask marks bit 31 and bit 63).
	if _, err := mr.AtomicCompareAndSwap(8, 0, 0x00000001ffffffff); err != nil {
		return time.Since(start), adds, err
	}
	if _, err := from.qp.FetchAddMasked(ctx, word1, 0x0000000100000001, 0x8000000080000000); err != nil {
		return time.Since(start), adds, err
	}
	if v, _ := mr.AtomicLoad(8); v != 0x0000000200000000 {
		return time.Since(start), adds + 1, fmt.Errorf("masked FetchAdd left %#x", v)
	}
	// CompareSwap: one that matches, one that does not.
	if orig, err := from.qp.CompareSwap(ctx, word0, 3*adds, 7); err != nil || orig != 3*adds {
		return time.Since(start), adds + 2, fmt.Errorf("CompareSwap returned %d (%v)", orig, err)
	}
	if orig, err := from.qp.CompareSwap(ctx, word0, 0, 9); err != nil || orig != 7 {
		return time.Since(start), adds + 3, fmt.Errorf("failing CompareSwap returned %d (%v)", orig, err)
	}
	if v, _ := mr.AtomicLoad(0); v != 7 {
		return time.Since(start), adds + 3, fmt.Errorf("counter holds %d after the CompareSwaps", v)
	}
	return time.Since(start), adds + 3, nil
}

// demoImmediate sends Immediate Data with a solicited event into a
// zero-length receive.
func demoImmediate(ctx context.Context, from, to *demoSide) (time.Duration, error) {
	rmr, _, err := regOrEmpty(to.pd, 0, iwarp.AccessLocalWrite, 0)
	if err != nil {
		return 0, err
	}
	defer rmr.Deregister(ctx)
	if err := to.qp.PostRecv(iwarp.RecvWR{ID: 3, SGL: []iwarp.SGE{rmr.SGE(0, 0)}}); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := from.qp.SendImmediate(ctx, 0xc0ffee0001020304, true); err != nil {
		return 0, err
	}
	c, err := to.cq.Next(ctx)
	d := time.Since(start)
	if err != nil {
		return d, err
	}
	if !c.HasImmediate || c.Immediate != 0xc0ffee0001020304 || !c.Solicited {
		return d, fmt.Errorf("completion %+v", c)
	}
	return d, nil
}

// demoWriteImm writes n bytes with immediate data; the responder checks
// the bytes when the immediate completes.
func demoWriteImm(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	tmr, tbuf, err := regOrEmpty(to.pd, n, iwarp.AccessRemoteWrite, 0)
	if err != nil {
		return 0, err
	}
	defer tmr.Deregister(ctx)
	smr, sbuf, err := regOrEmpty(from.pd, n, 0, 0x44)
	if err != nil {
		return 0, err
	}
	defer smr.Deregister(ctx)
	nmr, _, err := regOrEmpty(to.pd, 0, iwarp.AccessLocalWrite, 0)
	if err != nil {
		return 0, err
	}
	defer nmr.Deregister(ctx)
	if err := to.qp.PostRecv(iwarp.RecvWR{ID: 4, SGL: []iwarp.SGE{nmr.SGE(0, 0)}}); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := from.qp.WriteWithImmediate(ctx, tmr.Remote(), uint64(n), smr.SGE(0, n)); err != nil {
		return 0, err
	}
	c, err := to.cq.Next(ctx)
	d := time.Since(start)
	if err != nil {
		return d, err
	}
	if !c.HasImmediate || c.Immediate != uint64(n) {
		return d, fmt.Errorf("completion %+v", c)
	}
	if !bytes.Equal(tbuf, sbuf) {
		return d, fmt.Errorf("written bytes differ")
	}
	return d, nil
}

// demoSendImm sends n bytes with immediate data (V2) into a receive of
// exactly n bytes.
func demoSendImm(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	rmr, rbuf, err := regOrEmpty(to.pd, n, iwarp.AccessLocalWrite, 0)
	if err != nil {
		return 0, err
	}
	defer rmr.Deregister(ctx)
	smr, sbuf, err := regOrEmpty(from.pd, n, 0, 0x55)
	if err != nil {
		return 0, err
	}
	defer smr.Deregister(ctx)
	if err := to.qp.PostRecv(iwarp.RecvWR{ID: 5, SGL: []iwarp.SGE{rmr.SGE(0, n)}}); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := from.qp.SendWithImmediate(ctx, 0x5eed, smr.SGE(0, n)); err != nil {
		return 0, err
	}
	c, err := to.cq.Next(ctx)
	d := time.Since(start)
	if err != nil {
		return d, err
	}
	if c.Len != n || !c.HasImmediate || c.Immediate != 0x5eed {
		return d, fmt.Errorf("completion %+v", c)
	}
	if !bytes.Equal(rbuf, sbuf) {
		return d, fmt.Errorf("received bytes differ")
	}
	return d, nil
}

// demoReadV2 reads n bytes with RDMA Read V2 into a sink of two SGEs.
func demoReadV2(ctx context.Context, from, to *demoSide, n int) (time.Duration, error) {
	smr, sbuf, err := regOrEmpty(to.pd, n, iwarp.AccessRemoteRead, 0x66)
	if err != nil {
		return 0, err
	}
	defer smr.Deregister(ctx)
	dmr, dbuf, err := regOrEmpty(from.pd, n, iwarp.AccessLocalWrite, 0)
	if err != nil {
		return 0, err
	}
	defer dmr.Deregister(ctx)
	remote, err := smr.RemoteSlice(0, n)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := from.qp.ReadV2(ctx, remote, dmr.SGE(0, n/2), dmr.SGE(n/2, n-n/2)); err != nil {
		return 0, err
	}
	d := time.Since(start)
	if !bytes.Equal(dbuf, sbuf) {
		return d, fmt.Errorf("read bytes differ")
	}
	return d, nil
}
