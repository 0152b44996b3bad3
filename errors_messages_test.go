package iwarp

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/verbs"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// The messages of the errors the API returns read well to a user: at most
// one "iwarp: " prefix, no internal package's name, no phrase said twice.

// leakedNames are the internal package names a message must not show.
var leakedNames = regexp.MustCompile(`(?i:engine)|\bmpa:|\bfpdu|\bmem:`)

// checkMessage reports what is wrong with err's message, or "".
func checkMessage(err error) string {
	msg := err.Error()
	switch {
	case leakedNames.MatchString(msg):
		return "names an internal package"
	case strings.Count(msg, "iwarp:") > 1:
		return `says "iwarp:" more than once`
	}
	if p := repeatedPhrase(msg); p != "" {
		return fmt.Sprintf("says %q twice", p)
	}
	return ""
}

// stopWords do not make a phrase on their own, nor do numbers (the bytes
// of a control field).
var stopWords = map[string]bool{"a": true, "an": true, "the": true, "of": true, "to": true, "in": true, "on": true,
	"by": true, "is": true, "not": true, "and": true, "or": true, "for": true, "its": true, "it": true, "with": true,
	"at": true, "as": true, "no": true, "be": true, "than": true, "from": true}

// repeatedPhrase returns a pair of consecutive words (not both stop words)
// that occurs twice in msg, or "".
func repeatedPhrase(msg string) string {
	words := regexp.MustCompile(`[a-z0-9/]+`).FindAllString(strings.ToLower(msg), -1)
	seen := map[string]bool{}
	for i := 0; i+1 < len(words); i++ {
		if stopWords[words[i]] && stopWords[words[i+1]] || !hasLetter(words[i]) || !hasLetter(words[i+1]) {
			continue
		}
		p := words[i] + " " + words[i+1]
		if seen[p] {
			return p
		}
		seen[p] = true
	}
	return ""
}

func hasLetter(w string) bool { return strings.ContainsAny(w, "abcdefghijklmnopqrstuvwxyz") }

func TestRepeatedPhrase(t *testing.T) {
	for msg, want := range map[string]string{
		"iwarp: queue pair not connected: queue pair is not connected": "queue pair",
		"sent Terminate DDP/1/0x01 (x): y (Terminate DDP/1/0x01 (x))":  "terminate ddp/1/0x01",
		"iwarp: send WR 0 (id 1): the last free send-queue slot":       "",
		"connection setup failed while waiting for the MPA Reply":      "",
		"control 10 00 00 00": "",
	} {
		if got := repeatedPhrase(msg); got != want {
			t.Errorf("repeatedPhrase(%q) = %q, want %q", msg, got, want)
		}
	}
}

// namedError is an error the API can return and how it was made.
type namedError struct {
	name string
	err  error
}

// apiErrors collects the errors the API returns: its sentinels and the
// lower layers' errors as its wrapping functions return them.
func apiErrors() []namedError {
	var errs []namedError
	add := func(name string, err error) { errs = append(errs, namedError{name, err}) }
	for name, err := range map[string]error{
		"ErrInvalidBuffer": ErrInvalidBuffer, "ErrRange": ErrRange, "ErrInvalidConfig": ErrInvalidConfig,
		"ErrInvalidWR": ErrInvalidWR, "ErrQueueFull": ErrQueueFull, "ErrNotConnected": ErrNotConnected,
		"ErrNotSupportedByPeer": ErrNotSupportedByPeer, "ErrCQCapacity": ErrCQCapacity, "ErrClosed": ErrClosed,
		"ErrNotAtomicWord": ErrNotAtomicWord, "ErrTerminated": ErrTerminated, "ErrPeerDisconnected": ErrPeerDisconnected,
		"ErrDisconnected": ErrDisconnected, "ErrQPClosed": ErrQPClosed,
		"ErrMWType": ErrMWType, "ErrMWBound": ErrMWBound, "ErrMWAccess": ErrMWAccess, "ErrMWPD": ErrMWPD,
		"ErrMWRegion": ErrMWRegion, "ErrMWDeallocated": ErrMWDeallocated, "ErrMWSTag": ErrMWSTag,
	} {
		add(name, err)
	}
	// The engine's posting errors, as postError returns them, bare and
	// with the engine's "send WR i (id n)" wrapping.
	for _, e := range []error{rdmap.ErrSQFull, rdmap.ErrSQNeedsSignaled, rdmap.ErrRQFull, rdmap.ErrTooManySGE,
		rdmap.ErrBadSGE, rdmap.ErrBadOp, verbs.ErrNotConnected, rdmap.ErrMessageSize, rdmap.ErrInlineTooLong,
		rdmap.ErrReadSinkSGE, rdmap.ErrAccess, rdmap.ErrNoORD, rdmap.ErrNotSupportedByPeer, rdmap.ErrMisaligned,
		rdmap.ErrRegionInvalid, rdmap.ErrLocalInvalidate, rdmap.ErrSharedRecv, rdmap.ErrBindSGE, rdmap.ErrBindNoWindow} {
		add("postError("+e.Error()+")", postError(e))
		add("postError(send WR: "+e.Error()+")", postError(fmt.Errorf("send WR 3 (id 7): %w", e)))
	}
	for _, cause := range []error{rdmap.ErrPeerDisconnected, rdmap.ErrDisconnected, rdmap.ErrLocallyClosed,
		rdmap.ErrLocalProtection, &rdmap.ConnectionError{Err: rdmap.ErrLeaseRevoked},
		&rdmap.ConnectionError{Err: verbs.ErrPeerStalled}, &rdmap.ConnectionError{Err: io.ErrUnexpectedEOF}} {
		add("QP error "+cause.Error(), wrapEngineError(cause))
		add("state error "+cause.Error(), postError(fmt.Errorf("%w (ERROR): %w", rdmap.ErrQPState, cause)))
		add("flushed "+cause.Error(), &WRError{Status: StatusFlushed, Op: OpRead, Err: wrapEngineError(cause)})
	}
	// Terminates, with the violations that carry their own code.
	for _, te := range []*rdmap.TerminateError{
		{Sent: true, Code: rdma.TermDDPBaseBounds, Cause: wire.NewProtocolError(mem.OutOfBounds.String(), rdma.TermDDPBaseBounds)},
		{Sent: true, Code: rdma.TermDDPNoBuffer, Cause: rdmap.ErrNoRecvBuffer},
		{Sent: true, Code: rdma.TermRDMAPStreamCatastroph, Cause: rdmap.ErrIRDExceeded},
		{Code: rdma.TermDDPInvalidSTag, Layout: wire.LayoutSiw, Control: [4]byte{0x10, 0, 0, 0}},
	} {
		add("Terminate "+te.Error(), wrapEngineError(te))
		add("completion of Terminate "+te.Error(), &WRError{Status: StatusRemoteAccess, Op: OpWrite, Err: wrapEngineError(te)})
	}
	// The connection setup's errors, as wrapSetupError returns them.
	for _, e := range []error{
		&mpa.RejectError{PrivateData: []byte("busy")},
		&mpa.SentTerminateError{Code: rdma.TermLLPInvalidFrame, Cause: mpa.ErrInvalidReply, Delivered: true},
		&mpa.PeerTerminateError{Code: rdma.TermLLPInsufficientIRD},
		&mpa.TimeoutError{Stage: "waiting for the MPA Reply", Err: os.ErrDeadlineExceeded},
	} {
		add("setup "+e.Error(), wrapSetupError(e))
	}
	// The memory table's.
	for _, e := range []error{mem.ErrTableFull, mem.ErrEmptyBuffer, mem.ErrBadAccess, mem.ErrDeregistered,
		mem.ErrBaseOverflow, mem.ErrAtomicAligned} {
		add("memory "+e.Error(), wrapAs(ErrInvalidBuffer, e))
	}
	// The memory windows' (mw.go): the table's errors as the calls return
	// them, and a failed bind WR's completion error.
	for _, e := range []error{mem.ErrWindowType, mem.ErrWindowParent, mem.ErrWindowPD, mem.ErrWindowAccess,
		mem.ErrWindowLocalWrite, mem.ErrNoMWBind, mem.ErrWindowBounds, mem.ErrWindowEmpty, mem.ErrWindowBound,
		mem.ErrParentInvalid, mem.ErrDeallocated, mem.ErrWindowType1, rdmap.ErrBindSTag, rdmap.ErrBindType, rdmap.ErrBindPD} {
		add("window "+e.Error(), mwError(e))
		bind := wrapEngineError(fmt.Errorf("%w: %w", rdmap.ErrBindWindow, e))
		add("bind WR "+e.Error(), &WRError{Status: StatusLocalProtection, Op: OpBindWindow, Err: bind})
		if windowKind(e) == nil || !errors.Is(bind, windowKind(e)) {
			panic("no window sentinel for " + e.Error())
		}
	}
	return errs
}

// liveErrors are errors the API returned to calls made here.
func liveErrors(t *testing.T) []namedError {
	var errs []namedError
	add := func(name string, err error) {
		if err == nil {
			t.Errorf("%s: no error", name)
			return
		}
		errs = append(errs, namedError{name, err})
	}
	dev := NewDevice(nil)
	defer dev.Close()
	pd, _ := dev.AllocPD()
	_, err := pd.RegisterMemory(nil, AccessLocalWrite)
	add("RegisterMemory(nil)", err)
	_, err = dev.NewCQ(0, nil)
	add("NewCQ(0)", err)
	small, _ := dev.NewCQ(4, nil)
	_, err = pd.NewQP(&QPConfig{SendCQ: small, RecvCQ: small, SendQueueDepth: 8, RecvQueueDepth: 8})
	add("NewQP on a small CQ", err)
	cq, _ := dev.NewCQ(256, nil)
	qp, err := pd.NewQP(&QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 4, RecvQueueDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer qp.Close()
	add("PostSend on an idle QP", qp.PostSend(SendWR{Op: OpSend}))
	add("Send on an idle QP", qp.Send(context.Background()))
	mr, _ := pd.RegisterMemory(make([]byte, 8), AccessLocalWrite)
	_, err = mr.RemoteSlice(4, 8)
	add("RemoteSlice out of range", err)
	_ = mr.Deregister(context.Background())
	add("Deregister twice", mr.Deregister(context.Background()))
	var rb RemoteBuffer
	add("UnmarshalBinary", rb.UnmarshalBinary([]byte{1}))
	srq, _ := pd.NewSRQ(&SRQConfig{Depth: 2})
	sqp, err := pd.NewQP(&QPConfig{SendCQ: cq, RecvCQ: cq, SRQ: srq})
	if err != nil {
		t.Fatal(err)
	}
	defer sqp.Close()
	add("PostRecv on a QP with an SRQ", sqp.PostRecv(RecvWR{ID: 1}))
	add("SRQ overfull", srq.PostRecv(RecvWR{ID: 1}, RecvWR{ID: 2}, RecvWR{ID: 3}))
	// A peer that answers the MPA Request with garbage, one that never
	// answers, and a Request that is garbage.
	for name, answer := range map[string][]byte{"garbage Reply": []byte(strings.Repeat("x", 40)), "silent peer": nil} {
		a, b := net.Pipe()
		go func() {
			_, _ = b.Read(make([]byte, 1024)) // the Request, written at once
			if answer != nil {
				_, _ = b.Write(answer)
			}
		}()
		q, _ := pd.NewQP(&QPConfig{SendCQ: cq, RecvCQ: cq, SendQueueDepth: 4, RecvQueueDepth: 4})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		add("ConnectConn to a "+name, q.ConnectConn(ctx, a, &ConnOptions{Timeout: time.Second}))
		cancel()
		b.Close()
		q.Close()
	}
	a, b := net.Pipe()
	go func() { _, _ = a.Write([]byte(strings.Repeat("y", 40))); a.Close() }()
	_, err = ReadConnRequest(context.Background(), b, &ListenConfig{StartupTimeout: time.Second})
	add("ReadConnRequest of garbage", err)
	// Memory windows.
	_, err = pd.AllocMW(3)
	add("AllocMW(3)", err)
	mw2, _ := pd.AllocMW(WindowType2)
	parent, _ := pd.RegisterMemory(make([]byte, 64), AccessLocalWrite)
	_, err = mw2.Bind(context.Background(), parent, 0, 8, AccessRemoteRead)
	add("Bind of a type 2 window", err)
	mw1, _ := pd.AllocMW(WindowType1)
	_, err = mw1.Bind(context.Background(), parent, 0, 8, AccessRemoteRead)
	add("Bind to a region without AccessMWBind", err)
	_ = mw1.Close()
	add("Dealloc twice", mw1.Dealloc(context.Background()))
	return errs
}

// TestErrorMessages: every error the API can return reads well.
func TestErrorMessages(t *testing.T) {
	for _, e := range append(apiErrors(), liveErrors(t)...) {
		t.Logf("%s: %v", e.name, e.err)
		if why := checkMessage(e.err); why != "" {
			t.Errorf("%s: %q %s", e.name, e.err.Error(), why)
		}
	}
}

// TestErrorIdentity: the wrapping keeps errors.Is and errors.As working.
func TestErrorIdentity(t *testing.T) {
	for _, c := range []struct {
		err  error
		want []error
	}{
		{postError(fmt.Errorf("send WR 0 (id 1): %w", rdmap.ErrSQFull)), []error{ErrQueueFull, rdmap.ErrSQFull}},
		{postError(verbs.ErrNotConnected), []error{ErrNotConnected}},
		{postError(rdmap.ErrNotSupportedByPeer), []error{ErrNotSupportedByPeer}},
		{postError(rdmap.ErrSharedRecv), []error{ErrInvalidWR}},
		{postError(rdmap.ErrBadSGE), []error{ErrInvalidWR}},
		{postError(fmt.Errorf("%w (ERROR): %w", rdmap.ErrQPState, rdmap.ErrPeerDisconnected)), []error{ErrPeerDisconnected}},
		{wrapEngineError(rdmap.ErrPeerDisconnected), []error{ErrPeerDisconnected}},
		{wrapEngineError(rdmap.ErrDisconnected), []error{ErrDisconnected}},
		{wrapEngineError(rdmap.ErrLocallyClosed), []error{ErrQPClosed}},
		{wrapEngineError(&rdmap.ConnectionError{Err: verbs.ErrPeerStalled}), []error{verbs.ErrPeerStalled}},
		{wrapEngineError(&rdmap.TerminateError{Code: rdma.TermDDPNoBuffer, Sent: true, Cause: rdmap.ErrNoRecvBuffer}), []error{ErrTerminated, rdmap.ErrNoRecvBuffer}},
		{wrapSetupError(&mpa.TimeoutError{Stage: "x", Err: context.DeadlineExceeded}), []error{context.DeadlineExceeded}},
		{wrapAs(ErrInvalidBuffer, mem.ErrEmptyBuffer), []error{ErrInvalidBuffer, mem.ErrEmptyBuffer}},
	} {
		for _, w := range c.want {
			if !errors.Is(c.err, w) {
				t.Errorf("%q is not %q", c.err, w)
			}
		}
	}
	var te *TerminateError
	if err := postError(fmt.Errorf("%w: %w", rdmap.ErrQPState, &rdmap.TerminateError{Code: rdma.TermDDPBaseBounds})); !errors.As(err, &te) || te.Code != TermDDPBaseBounds {
		t.Errorf("a post to a terminated QP: %v", err)
	}
	var re *RejectedError
	if err := wrapSetupError(&mpa.RejectError{PrivateData: []byte("no")}); !errors.As(err, &re) || string(re.PrivateData) != "no" {
		t.Errorf("a rejection: %v", err)
	}
	if err := wrapAs(nil, context.Canceled); err != context.Canceled {
		t.Errorf("a context's error is wrapped: %v", err)
	}
}

// TestErrorStrings: no error text written in the lower layers names its
// package or the API's prefix (the API adds "iwarp: " once).
func TestErrorStrings(t *testing.T) {
	for _, dir := range []string{"internal/verbs", "internal/rdmap", "internal/mpa", "internal/mem", "internal/fpdu"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		if len(files) == 0 {
			t.Fatalf("no Go files in %s", dir)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			for pos, s := range errorLiterals(t, f) {
				if leakedNames.MatchString(s) || strings.HasPrefix(s, "iwarp:") {
					t.Errorf("%s: error text %q", pos, s)
				}
			}
		}
	}
}

// errorLiterals returns the string literals given to errors.New and
// fmt.Errorf in file f, by position.
func errorLiterals(t *testing.T, f string) map[string]string {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, f, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	lit := func(e ast.Expr) {
		if bl, ok := e.(*ast.BasicLit); ok && bl.Kind == token.STRING {
			if s, err := strconv.Unquote(bl.Value); err == nil {
				out[fset.Position(bl.Pos()).String()] = s
			}
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && len(call.Args) > 0 {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "errors" && sel.Sel.Name == "New" || x.Name == "fmt" && sel.Sel.Name == "Errorf") {
					lit(call.Args[0])
				}
			}
		}
		return true
	})
	return out
}
