package main

import (
	"context"
	"fmt"
	"io"
	"os"
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

const demoAbout = `Starts a responder and an initiator in this process, connects them over
TCP on loopback (MPA Rev 2, CRC, peer-to-peer mode, RFC 7306 and V2
negotiated) and runs every operation, each verified: Send, RDMA Write and
RDMA Read over a sweep of sizes up to -max; Send with Invalidate, Local
Invalidate and RDMA Read with Invalidate; a solicited event waking a CQ
armed for solicited completions; Sends into a shared receive queue of two
connections; FetchAdd and CompareSwap, plain and with RFC 7306's masks;
Immediate Data, Write with Immediate, Send with Immediate and RDMA Read V2.
With -markers both ends ask for MPA markers (RFC 5044 §4.3); with -pcap the
initiator's connections are recorded to a pcap file (no privileges needed)
for Wireshark, tshark or "iwarp decode".
Exits 0 when every operation was verified, 1 if any failed.`

// demoMaxSize bounds -max: the sweep's largest size is allocated twice (a
// source and a destination buffer).
const demoMaxSize = 1 << 30

// demoConfig is what the demo's flags chose.
type demoConfig struct {
	addr    string // the responder's listen address
	crc     bool
	markers bool      // ask for MPA markers in both directions
	pcap    io.Writer // if set, the initiator's connections are recorded here
	maxSize int       // the largest message of the size sweep
	// extra steps run after the plan (tests use them).
	extra []demoStep
}

func runDemo(args []string, stdout, stderr io.Writer) int {
	f := newFlags("demo", "[options]", demoAbout, stdout, stderr)
	addr := f.String("a", defaultHost, "responder's listen `HOST[:PORT]` (the initiator dials it)")
	port := f.Int("p", 0, "responder's `PORT` (0: any free port)")
	noCRC := f.Bool("nocrc", false, "do not ask for MPA CRCs")
	markers := f.Bool("markers", false, "ask for MPA markers in both directions")
	pcapFile := f.String("pcap", "", "record the initiator's connections to this pcap `file`")
	maxSize := f.Int("max", 16<<20, fmt.Sprintf("largest message `size` of the size sweep, in bytes (0 to %d)", demoMaxSize))
	if code, ok := f.parse(args); !ok {
		return code
	}
	listen, ok := addrFromFlags(f, *addr, *port)
	if !ok || !noArgs(f) || !f.checkInt("max", int64(*maxSize), 0, demoMaxSize) {
		return exitUsage
	}
	cfg := demoConfig{addr: listen, crc: !*noCRC, markers: *markers, maxSize: *maxSize}
	if *pcapFile != "" {
		pf, err := os.Create(*pcapFile)
		if err != nil {
			return f.fail("%v", err)
		}
		defer pf.Close()
		cfg.pcap = pf
	}
	if err := demo(stdout, cfg); err != nil {
		return f.fail("%v", err)
	}
	return exitOK
}

// demoEnv is the demo's connection and what its steps need.
type demoEnv struct {
	ctx        context.Context
	dev        *iwarp.Device
	ln         *iwarp.Listener
	crc        bool
	markers    bool
	capture    *iwarp.Capture // nil: not recording
	init, resp *demoSide
	// events is the channel resp.cq notifies when armed.
	events *iwarp.EventChannel
}

// demoSide is one end of a demo connection.
type demoSide struct {
	pd *iwarp.PD
	cq *iwarp.CQ
	qp *iwarp.QP
}

// newDemoSide creates a QP with one CQ for both queues, bound to ch when
// ch is not nil, and drawing its receives from srq when srq is not nil.
func newDemoSide(pd *iwarp.PD, ch *iwarp.EventChannel, srq *iwarp.SRQ) (*demoSide, error) {
	cq, err := pd.Device().NewCQ(128, ch)
	if err != nil {
		return nil, err
	}
	qp, err := pd.NewQP(&iwarp.QPConfig{SendCQ: cq, RecvCQ: cq, SRQ: srq, SendQueueDepth: 32, RecvQueueDepth: 32})
	if err != nil {
		return nil, err
	}
	return &demoSide{pd: pd, cq: cq, qp: qp}, nil
}

// connect connects init to resp through the demo's listener.
func (e *demoEnv) connect(init, resp *demoSide) error {
	accepted := make(chan error, 1)
	go func() {
		req, err := e.ln.Accept(e.ctx)
		if err != nil {
			accepted <- err
			return
		}
		accepted <- req.Accept(e.ctx, resp.qp, &iwarp.ConnOptions{DisableCRC: !e.crc, PrivateData: []byte("iwarp demo responder"), Interop: &iwarp.InteropOptions{Markers: e.markers}})
	}()
	opts := &iwarp.ConnOptions{DisableCRC: !e.crc, PrivateData: []byte("iwarp demo initiator"), Interop: &iwarp.InteropOptions{Markers: e.markers}}
	if e.capture != nil {
		opts.Dialer = e.capture.Dialer(nil)
	}
	if err := init.qp.Connect(e.ctx, "tcp", e.ln.Addr().String(), opts); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if err := <-accepted; err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	return nil
}

func demo(w io.Writer, cfg demoConfig) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dev := iwarp.NewDevice(nil)
	defer dev.Close()
	e := &demoEnv{ctx: ctx, dev: dev, crc: cfg.crc, markers: cfg.markers, events: iwarp.NewEventChannel(1)}
	if cfg.pcap != nil {
		c, err := iwarp.NewCapture(cfg.pcap, nil)
		if err != nil {
			return err
		}
		e.capture = c
		defer func() {
			if err := c.Close(); err != nil {
				fmt.Fprintf(w, "capture: %v\n", err)
			}
		}()
	}
	respPD, err := dev.AllocPD()
	if err != nil {
		return err
	}
	initPD, err := dev.AllocPD()
	if err != nil {
		return err
	}
	if e.resp, err = newDemoSide(respPD, e.events, nil); err != nil {
		return err
	}
	if e.init, err = newDemoSide(initPD, nil, nil); err != nil {
		return err
	}
	if e.ln, err = iwarp.Listen("tcp", cfg.addr, nil); err != nil {
		return err
	}
	defer e.ln.Close()
	if err := e.connect(e.init, e.resp); err != nil {
		return err
	}
	defer e.init.qp.Close()
	defer e.resp.qp.Close()
	a := e.init.qp.Attributes()
	fmt.Fprintf(w, "connected initiator -> %s: MPA rev %d, CRC %v, P2P %v (RTR %s), IRD/ORD %d/%d, MULPDU %d, extensions RFC7306=%v V2=%v\n",
		e.ln.Addr(), a.MPARevision, a.CRC, a.P2P, a.RTR, a.IRD, a.ORD, a.MULPDU, a.RFC7306, a.V2)
	fmt.Fprintf(w, "private data: initiator saw %q, responder saw %q\n\n", a.PeerPrivateData, e.resp.qp.Attributes().PeerPrivateData)

	steps := append(demoPlan(a, cfg.maxSize), cfg.extra...)
	rows := make([]demoRow, 0, len(steps))
	failures := 0
	for _, s := range steps {
		d, err := s.run(e)
		if err != nil {
			failures++
		}
		rows = append(rows, demoRow{step: s, d: d, err: err})
	}
	writeDemoTable(w, rows)
	if err := e.init.qp.Disconnect(ctx); err != nil {
		return fmt.Errorf("disconnect: %w", err)
	}
	<-e.resp.qp.Done()
	fmt.Fprintf(w, "\ndisconnected in order; responder saw: %v\n", e.resp.qp.Err())
	st := dev.Stats()
	fmt.Fprintf(w, "device counters: %d FPDUs / %d bytes sent, %d FPDUs / %d bytes received, %d CRC errors, %d Terminates, %d SRQ limit events\n",
		st.FPDUsSent, st.BytesSent, st.FPDUsReceived, st.BytesReceived, st.CRCErrors, len(st.Terminates), st.SRQLimitEvents)
	if failures > 0 {
		return fmt.Errorf("%d of %d operations failed", failures, len(steps))
	}
	fmt.Fprintf(w, "all %d operations verified\n", len(steps))
	return nil
}
