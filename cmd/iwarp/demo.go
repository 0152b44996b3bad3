package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

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
