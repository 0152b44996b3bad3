package rping

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/goiwarp/iwarp"
)

// getaddrinfo's error codes (glibc's EAI_ values), which rping returns from
// main when -a or -I does not resolve: its exit status is the code's low
// byte (EAI_NONAME: 254).
const (
	eaiNoName = -2
	eaiAgain  = -3
	eaiFail   = -4
)

// AddrError reports an address (-a or -I) that does not resolve, as rping's
// get_addr does.
type AddrError struct {
	Host string
	// Code is getaddrinfo's error code (negative).
	Code int
	Err  error
}

// Error is rping's line: "getaddrinfo failed (REASON) - invalid hostname or
// IP address".
func (e *AddrError) Error() string {
	reason := "Non-recoverable failure in name resolution"
	switch e.Code {
	case eaiNoName:
		reason = "Name or service not known"
	case eaiAgain:
		reason = "Temporary failure in name resolution"
	}
	return fmt.Sprintf("getaddrinfo failed (%s) - invalid hostname or IP address", reason)
}

// Unwrap returns the resolver's error.
func (e *AddrError) Unwrap() error { return e.Err }

// ExitStatus is the status rping exits with: the code's low byte.
func (e *AddrError) ExitStatus() int { return e.Code & 0xff }

// Resolve turns -a's or -I's host into an address as rping does (the first
// address getaddrinfo gives). Its error is an *AddrError.
func Resolve(ctx context.Context, host string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap(), nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err == nil && len(addrs) > 0 {
		return addrs[0].Unmap(), nil
	}
	code := eaiFail
	var de *net.DNSError
	switch {
	case err == nil || errors.As(err, &de) && de.IsNotFound:
		code = eaiNoName
	case de != nil && (de.IsTimeout || de.IsTemporary):
		code = eaiAgain
	}
	return netip.Addr{}, &AddrError{Host: host, Code: code, Err: err}
}

// Linux errno values, as rping prints them in its cma event lines.
const (
	errnoProto       = 71
	errnoConnReset   = 104
	errnoTimedOut    = 110
	errnoConnRefused = 111
)

// strerror describes err as perror would: the C library's text for an
// errno ("Connection refused"), "Connection timed out" for a deadline.
func strerror(err error) string {
	var en syscall.Errno
	switch {
	case errors.As(err, &en):
		s := en.Error()
		r, n := utf8.DecodeRuneInString(s)
		return string(unicode.ToUpper(r)) + s[n:]
	case isTimeout(err):
		return "Connection timed out"
	}
	return err.Error()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout()
}

// setupEvent names the rdma_cm event, and its status, that Linux reports to
// rping when an iWARP connection's MPA startup fails the way err says
// (cma_iw_handler: -ECONNRESET and -ECONNREFUSED are REJECTED, -ETIMEDOUT
// UNREACHABLE, anything else CONNECT_ERROR).
func setupEvent(err error) (event string, status int) {
	var rej *iwarp.RejectedError
	switch {
	case errors.As(err, &rej), errors.Is(err, syscall.ECONNREFUSED):
		return "RDMA_CM_EVENT_REJECTED", -errnoConnRefused
	case isTimeout(err):
		return "RDMA_CM_EVENT_UNREACHABLE", -errnoTimedOut
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return "RDMA_CM_EVENT_REJECTED", -errnoConnReset
	}
	return "RDMA_CM_EVENT_CONNECT_ERROR", -errnoProto
}

// wcStatus is the ibv_wc_status number of a completion status, as rping's
// "cq completion failed status %d" prints it (Linux siw reports a failure
// it has no closer code for as IBV_WC_GENERAL_ERR).
func wcStatus(s iwarp.Status) int {
	switch s {
	case iwarp.StatusSuccess:
		return 0
	case iwarp.StatusLocalLength:
		return 1 // IBV_WC_LOC_LEN_ERR
	case iwarp.StatusLocalProtection:
		return 4 // IBV_WC_LOC_PROT_ERR
	case iwarp.StatusFlushed:
		return 5 // IBV_WC_WR_FLUSH_ERR
	case iwarp.StatusRemoteAccess:
		return 10 // IBV_WC_REM_ACCESS_ERR
	case iwarp.StatusRemoteOperation:
		return 11 // IBV_WC_REM_OP_ERR
	}
	return 21 // IBV_WC_GENERAL_ERR
}

// postErrno is the errno ibv_post_send or ibv_post_recv returns for a
// failed post ("post send error %d").
func postErrno(err error) int {
	switch {
	case errors.Is(err, iwarp.ErrQueueFull):
		return 12 // ENOMEM
	case errors.Is(err, iwarp.ErrNotConnected), errors.Is(err, iwarp.ErrClosed):
		return 107 // ENOTCONN
	}
	return 22 // EINVAL
}
