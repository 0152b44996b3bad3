package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/rping"
)

// extcheck connects to any responder (Linux siw's rping server in the
// interop suite) and checks how this stack behaves when the peer does not
// speak the RDMAP extensions, and how the peer's Terminates surface:
//
//   - no-ext: the peer did not agree to RFC 7306; FetchAdd, Immediate Data
//     and Write with Immediate must fail locally with ErrNotSupportedByPeer
//     and send nothing (the QP's FPDU counter does not move).
//   - forced: RFC 7306 declared with ConnOptions.PeerExtensions; a FetchAdd
//     and a Send behind it are posted. A peer without RFC 7306 answers with
//     Terminate RDMAP/remote operation 0x06, which must surface as a received
//     *TerminateError; the FetchAdd completes with an error, everything
//     behind it flushed.
//   - unknown-stag: a Write to an STag the peer does not know, then a Read;
//     the peer's Terminate DDP/tagged 0x00 must surface, the Read fail.

func init() {
	register(&command{name: "extcheck", short: "checks against a peer without RDMAP extensions: local refusal, forced extension and unknown-STag Terminates", run: runExtcheck})
}

const extcheckAbout = `
Connects to any responder (Linux siw's rping server in the interop suite)
and checks how this stack behaves with a peer that does not speak the RDMAP
extensions (-case): no-ext, RFC 7306 calls refused locally with nothing
sent; forced, RFC 7306 declared anyway, the peer's Terminate surfaces;
unknown-stag, a Write to an STag the peer does not know, its Terminate
surfaces. Prints "extcheck CASE: PASS" or the failure.

Exit status: 0 PASS, 1 FAIL (or no connection), 2 a bad flag; -h prints
this help and exits 0.`

// extcheckCases are the checks -case selects.
var extcheckCases = []string{"no-ext", "forced", "unknown-stag"}

func runExtcheck(args []string, stdout, stderr io.Writer) int {
	f := newFlags("extcheck", "[-a HOST[:PORT]] [-p PORT] [-case NAME] [options]", extcheckAbout, stdout, stderr)
	addr := f.String("a", defaultHost, "`HOST[:PORT]` of the responder")
	port := f.Int("p", rping.DefaultPort, "the responder's `PORT` (rping's by default)")
	which := f.String("case", "no-ext", "`NAME` of the check: "+strings.Join(extcheckCases, ", "))
	settle := f.Duration("settle", 5*time.Second, "wait `D` after connecting before provoking the peer's Terminate (Linux siw 6.1's iw_cm hits a kernel BUG when a connection fails before it has handled its own establishment; docs/interop.md)")
	timeout := f.Duration("timeout", 30*time.Second, "bound `D` on the whole check")
	if code, ok := f.parse(args); !ok {
		return code
	}
	switch {
	case f.NArg() > 0:
		fmt.Fprintf(stderr, "iwarp extcheck: unexpected argument %q\n", f.Arg(0))
		return exitUsage
	case !slices.Contains(extcheckCases, *which):
		return f.badFlag("case", *which, "must be one of %s", strings.Join(extcheckCases, ", "))
	case !f.checkInt("p", int64(*port), 1, 65535):
		return exitUsage
	case *settle < 0 || *settle > time.Minute:
		return f.badFlag("settle", *settle, "must be between 0s and 1m0s")
	case *timeout <= 0:
		return f.badFlag("timeout", *timeout, "must be positive")
	}
	target, err := hostPort(*addr, *port, flagSet(f.FlagSet, "p"))
	if err != nil {
		return f.badFlag("a", *addr, "%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	switch *which {
	case "no-ext":
		err = extNoExt(ctx, target, stdout)
	case "forced":
		err = extForced(ctx, target, *settle, stdout)
	default:
		err = extUnknownSTag(ctx, target, *settle, stdout)
	}
	if err != nil {
		fmt.Fprintf(stdout, "extcheck %s: FAIL: %v\n", *which, err)
		return exitFail
	}
	fmt.Fprintf(stdout, "extcheck %s: PASS\n", *which)
	return exitOK
}

// extEnd is a connected QP with a local buffer.
type extEnd struct {
	cq  *iwarp.CQ
	qp  *iwarp.QP
	buf *iwarp.MR
}

func extConnect(ctx context.Context, addr string, opts *iwarp.ConnOptions) (*extEnd, error) {
	dev := iwarp.NewDevice(nil)
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, err
	}
	e := &extEnd{}
	if e.cq, err = dev.NewCQ(16, nil); err != nil {
		return nil, err
	}
	if e.qp, err = pd.NewQP(&iwarp.QPConfig{SendCQ: e.cq, RecvCQ: e.cq, SendQueueDepth: 8, RecvQueueDepth: 2}); err != nil {
		return nil, err
	}
	if e.buf, err = pd.RegisterMemory(make([]byte, 64), iwarp.AccessLocalWrite); err != nil {
		return nil, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return e, e.qp.ConnectConn(ctx, nc, opts)
}

func extNoExt(ctx context.Context, addr string, w io.Writer) error {
	e, err := extConnect(ctx, addr, nil)
	if err != nil {
		return err
	}
	defer e.qp.Close()
	if a := e.qp.Attributes(); a.RFC7306 || a.V2 {
		return fmt.Errorf("the peer agreed to RFC 7306 %v / V2 %v: this check needs a peer without extensions", a.RFC7306, a.V2)
	}
	before := e.qp.Stats().FPDUsSent
	remote := iwarp.RemoteBuffer{STag: 0x00C0DE00, TO: 0, Len: 8}
	calls := []struct {
		name string
		do   func() error
	}{
		{"FetchAdd", func() error { _, err := e.qp.FetchAdd(ctx, remote, 1); return err }},
		{"CompareSwap", func() error { _, err := e.qp.CompareSwap(ctx, remote, 0, 1); return err }},
		{"ImmediateData", func() error { return e.qp.ImmediateData(ctx, 7, 0) }},
		{"WriteWithImmediate", func() error { return e.qp.WriteWithImmediate(ctx, remote, 7, e.buf.SGE(0, 8)) }},
	}
	for _, c := range calls {
		if err := c.do(); !errors.Is(err, iwarp.ErrNotSupportedByPeer) {
			return fmt.Errorf("%s returned %v, want ErrNotSupportedByPeer", c.name, err)
		}
		fmt.Fprintf(w, "extcheck no-ext: %s refused locally: %v\n", c.name, iwarp.ErrNotSupportedByPeer)
	}
	if after := e.qp.Stats().FPDUsSent; after != before {
		return fmt.Errorf("%d FPDUs went out for refused calls", after-before)
	}
	if e.qp.Err() != nil {
		return fmt.Errorf("the QP failed: %v", e.qp.Err())
	}
	fmt.Fprintln(w, "extcheck no-ext: nothing sent, the connection still up")
	return e.qp.Disconnect(ctx)
}

func extForced(ctx context.Context, addr string, settle time.Duration, w io.Writer) error {
	e, err := extConnect(ctx, addr, &iwarp.ConnOptions{PeerExtensions: iwarp.ExtRFC7306})
	if err != nil {
		return err
	}
	defer e.qp.Close()
	if err := extEstablish(ctx, e, settle); err != nil {
		return err
	}
	remote := iwarp.RemoteBuffer{STag: 0x00C0DE00, TO: 0, Len: 8}
	wrs := []iwarp.SendWR{
		{ID: 1, Op: iwarp.OpFetchAdd, Flags: iwarp.Signaled, Remote: remote, Add: 1},
		{ID: 2, Op: iwarp.OpSend, Flags: iwarp.Signaled, SGL: []iwarp.SGE{e.buf.SGE(0, 16)}},
		{ID: 3, Op: iwarp.OpRead, Flags: iwarp.Signaled, Remote: remote, SGL: []iwarp.SGE{e.buf.SGE(32, 8)}},
	}
	if err := e.qp.PostSend(wrs...); err != nil {
		return err
	}
	return extWaitTerminate(ctx, e, iwarp.TermRDMAPUnexpectedOpcode, 1, len(wrs), w, "forced")
}

func extUnknownSTag(ctx context.Context, addr string, settle time.Duration, w io.Writer) error {
	e, err := extConnect(ctx, addr, nil)
	if err != nil {
		return err
	}
	defer e.qp.Close()
	if err := extEstablish(ctx, e, settle); err != nil {
		return err
	}
	remote := iwarp.RemoteBuffer{STag: 0x00BADB00, TO: 0x1000, Len: 16}
	wrs := []iwarp.SendWR{
		{ID: 1, Op: iwarp.OpWrite, Flags: iwarp.Signaled, Remote: remote, SGL: []iwarp.SGE{e.buf.SGE(0, 16)}},
		{ID: 2, Op: iwarp.OpRead, Flags: iwarp.Signaled, Remote: remote, SGL: []iwarp.SGE{e.buf.SGE(32, 16)}},
	}
	if err := e.qp.PostSend(wrs...); err != nil {
		return err
	}
	return extWaitTerminate(ctx, e, iwarp.TermDDPInvalidSTag, 2, len(wrs), w, "unknown-stag")
}

// extEstablish sends a harmless first FPDU, a zero-length RDMA Write to
// STag 1 (the shape of siw's own Write RTR), and waits settle. Linux siw
// 6.1 reports a passive connection established to its iw_cm only when the
// first FPDU arrives: if that first FPDU is already a violation, the
// teardown races the establishment and iw_cm hits a kernel BUG
// (iwcm.c:969) that breaks every later connection of the host
// (docs/interop.md).
func extEstablish(ctx context.Context, e *extEnd, settle time.Duration) error {
	if err := e.qp.Write(ctx, iwarp.RemoteBuffer{STag: 1}); err != nil {
		return fmt.Errorf("zero-length Write: %w", err)
	}
	t := time.NewTimer(settle)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// extWaitTerminate waits for the QP to end with the peer's Terminate code,
// and checks that every posted WR completed, WR failID with an error, and
// every later Read (which needs the peer's answer) flushed; a later Send or
// Write may have succeeded (handed to TCP before the Terminate arrived,
// docs/semantics.md) or been flushed.
func extWaitTerminate(ctx context.Context, e *extEnd, code iwarp.TermCode, failID uint64, posted int, w io.Writer, name string) error {
	select {
	case <-e.qp.Done():
	case <-ctx.Done():
		return fmt.Errorf("no Terminate from the peer: %w", ctx.Err())
	}
	var te *iwarp.TerminateError
	if err := e.qp.Err(); !errors.As(err, &te) || te.Sent || te.Code != code {
		return fmt.Errorf("QP error %v, want a received Terminate %v", err, code)
	}
	fmt.Fprintf(w, "extcheck %s: received Terminate %v (control % x, siw layout %v)\n", name, te.Code, te.Control, te.SiwLayout)
	var out [8]iwarp.Completion
	n := e.cq.Poll(out[:])
	if n != posted {
		return fmt.Errorf("%d completions for %d posted WRs", n, posted)
	}
	for _, c := range out[:n] {
		fmt.Fprintf(w, "extcheck %s: WR %d %v %v\n", name, c.ID, c.Op, c.Status)
		switch {
		case c.ID == failID && c.Status == iwarp.StatusSuccess:
			return fmt.Errorf("WR %d succeeded", c.ID)
		case c.ID > failID && c.Op == iwarp.OpRead && c.Status != iwarp.StatusFlushed:
			return fmt.Errorf("the Read (WR %d) completed %v, want flushed", c.ID, c.Status)
		case c.ID > failID && c.Status != iwarp.StatusFlushed && c.Status != iwarp.StatusSuccess:
			return fmt.Errorf("WR %d completed %v, want success (sent) or flushed", c.ID, c.Status)
		}
	}
	return nil
}
