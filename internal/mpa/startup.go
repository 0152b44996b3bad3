package mpa

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// TimeoutError reports a startup that did not finish in time: the peer
// stalled (docs/spec/mpa.md §1, "A peer that stalls in startup must not
// hold resources forever"). It unwraps to context.DeadlineExceeded when the
// caller's context expired, else to os.ErrDeadlineExceeded (the configured
// startup timeout).
type TimeoutError struct {
	// Stage is what the startup was waiting for.
	Stage string
	// Err is context.DeadlineExceeded or os.ErrDeadlineExceeded.
	Err error
}

// Error returns "connection setup timed out waiting for ...".
func (e *TimeoutError) Error() string { return "connection setup timed out " + e.Stage }

// Unwrap returns the deadline that expired.
func (e *TimeoutError) Unwrap() error { return e.Err }

// Timeout reports true, as net.Error does.
func (e *TimeoutError) Timeout() bool { return true }

// ErrClosedBeforeFrame reports that the peer closed (or reset) the
// connection before sending a single byte of the expected Request or Reply:
// what irdma and cxgb4 do with a Request whose Rev they do not support
// (docs/spec/mpa.md §1). ConnectRev1Fallback retries on it.
var ErrClosedBeforeFrame = errors.New("peer closed the connection without sending an MPA frame")

// Stages of the startup, for errors.
const (
	stageRequest  = "waiting for the MPA Request"
	stageReply    = "waiting for the MPA Reply"
	stageSend     = "sending an MPA frame"
	stageRTR      = "waiting for the RTR"
	stageRTRReply = "waiting for the Read RTR's response"
)

// startup bounds one startup phase on a connection by the context and a
// timeout (whichever ends first), through the connection's deadline.
type startup struct {
	ctx      context.Context
	nc       net.Conn
	maxULPDU int
	stopCtx  func() bool
	fired    chan struct{}
	// ctxBound: the deadline is ctx's, so its expiry is ctx's expiry even
	// before ctx itself notices.
	ctxBound bool
}

// past is a deadline that has expired: setting it aborts blocked I/O.
var past = time.Unix(1, 0)

// begin sets nc's deadline to the earlier of ctx's and now+timeout, and
// arranges for a cancellation of ctx to abort blocked I/O.
func begin(ctx context.Context, nc net.Conn, timeout time.Duration) *startup {
	return beginUntil(ctx, nc, time.Now().Add(timeout))
}

// beginUntil is begin with an absolute deadline d (the earlier of d and
// ctx's deadline applies).
func beginUntil(ctx context.Context, nc net.Conn, d time.Time) *startup {
	s := &startup{ctx: ctx, nc: nc, fired: make(chan struct{})}
	if cd, ok := ctx.Deadline(); ok && !cd.After(d) {
		d, s.ctxBound = cd, true
	}
	_ = nc.SetDeadline(d)
	s.stopCtx = context.AfterFunc(ctx, func() {
		_ = nc.SetDeadline(past)
		close(s.fired)
	})
	return s
}

// end clears the deadline for full operation.
func (s *startup) end() {
	if !s.stopCtx() {
		<-s.fired // the cancellation ran: let it finish before clearing
	}
	_ = s.nc.SetDeadline(time.Time{})
}

// fail ends the phase, closes the connection and returns err.
func (s *startup) fail(err error) error {
	s.end()
	_ = s.nc.Close()
	return err
}

// ioErr turns an I/O error of stage into the startup's error: a
// *TimeoutError for an expired deadline, the context's error for a
// cancellation, else the error wrapped with the stage.
func (s *startup) ioErr(stage string, err error) error {
	if ce := s.ctx.Err(); ce != nil {
		if errors.Is(ce, context.DeadlineExceeded) {
			return &TimeoutError{Stage: stage, Err: context.DeadlineExceeded}
		}
		return fmt.Errorf("connection setup failed while %s: %w", stage, ce)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if s.ctxBound {
			return &TimeoutError{Stage: stage, Err: context.DeadlineExceeded}
		}
		return &TimeoutError{Stage: stage, Err: os.ErrDeadlineExceeded}
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("connection setup failed while %s: %w", stage, err)
}

// readFrame reads exactly one Request or Reply from nc, never a byte beyond
// its private data, and returns it parsed (its private data is its own).
func (s *startup) readFrame(stage string, maxPD int) (Frame, error) {
	var hdr [HeaderLen]byte
	if _, err := io.ReadFull(s.nc, hdr[:]); err != nil {
		if s.ctx.Err() == nil && (err == io.EOF || errors.Is(err, syscall.ECONNRESET)) {
			return Frame{}, fmt.Errorf("connection setup failed while %s: %w (%w)", stage, ErrClosedBeforeFrame, io.ErrUnexpectedEOF)
		}
		return Frame{}, s.ioErr(stage, err)
	}
	pdLen, err := parseHeader(hdr[:], maxPD)
	if err != nil {
		return Frame{}, err
	}
	buf := make([]byte, HeaderLen+pdLen)
	copy(buf, hdr[:])
	if _, err := io.ReadFull(s.nc, buf[HeaderLen:]); err != nil {
		return Frame{}, s.ioErr(stage, err)
	}
	f, _, err := ParseFrame(buf, maxPD)
	return f, err
}

// write sends b whole.
func (s *startup) write(b []byte) error {
	if _, err := s.nc.Write(b); err != nil {
		return s.ioErr(stageSend, err)
	}
	return nil
}
