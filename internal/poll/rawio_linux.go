//go:build linux && !iwarp_portable

package poll

import (
	"io"
	"os"
	"syscall"
)

// maxIOV is Linux's IOV_MAX: the most slices one readv or writev takes.
const maxIOV = 1024

// rawIO is one direction's non-blocking system call: its arguments and
// result live here so that the RawConn callback, made once at Register,
// needs no allocation per call. One call at a time per direction: the
// shell's receive and transmit tokens give that.
type rawIO struct {
	write bool
	buf   []byte          // Read, Write
	iov   []syscall.Iovec // Readv, Writev (kept for reuse)
	bufs  [][]byte        // Readv, Writev under the race detector
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

// Read reads into p without waiting: it returns what the socket had (up to
// len(p)), ErrWouldBlock if it had nothing, io.EOF at the end of the
// stream. A short read means the socket was empty at that moment: a Ready
// handler may Arm at once instead of reading again. Read and Readv must not
// run concurrently with each other, nor with a blocking Read of the
// connection (they would wait for it).
func (h *Handle) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	x := &h.rx
	x.buf = p
	err := h.rc.Read(x.fn)
	x.buf = nil
	return x.result(err)
}

// Readv is Read into the slices of bufs in turn, in one readv(2) (up to
// IOV_MAX of them).
func (h *Handle) Readv(bufs [][]byte) (int, error) {
	x := &h.rx
	if !x.setVec(bufs) {
		return 0, nil
	}
	err := h.rc.Read(x.fn)
	x.clearVec()
	return x.result(err)
}

// Write writes from p without waiting: it returns how many octets the
// socket's buffer took (perhaps fewer than len(p)), or ErrWouldBlock if it
// had no room. Write and Writev must not run concurrently with each other,
// nor with a blocking Write of the connection.
func (h *Handle) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	x := &h.tx
	x.buf = p
	err := h.rc.Write(x.fn)
	x.buf = nil
	return x.result(err)
}

// Writev is Write from the slices of bufs in turn, in one writev(2) (up to
// IOV_MAX of them).
func (h *Handle) Writev(bufs [][]byte) (int, error) {
	x := &h.tx
	if !x.setVec(bufs) {
		return 0, nil
	}
	err := h.rc.Write(x.fn)
	x.clearVec()
	return x.result(err)
}

// setVec describes the non-empty slices of bufs (IOV_MAX at most) and
// reports whether there is any.
func (x *rawIO) setVec(bufs [][]byte) bool {
	x.iov = x.iov[:0]
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		if len(x.iov) == maxIOV {
			break
		}
		v := syscall.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		x.iov = append(x.iov, v)
	}
	x.bufs = bufs
	return len(x.iov) > 0
}

// clearVec drops the references to the caller's buffers.
func (x *rawIO) clearVec() {
	clear(x.iov)
	x.iov = x.iov[:0]
	x.bufs = nil
}

// result turns the callback's outcome into Read's or Write's. err is the
// RawConn's own (a closed connection, a deadline that passed).
func (x *rawIO) result(err error) (int, error) {
	n, errno := x.n, x.errno
	x.n, x.errno = 0, 0
	switch {
	case err != nil:
		return 0, err
	case errno == syscall.EAGAIN:
		return 0, ErrWouldBlock
	case errno != 0:
		op := "read"
		if x.write {
			op = "write"
		}
		return 0, os.NewSyscallError(op, errno)
	case n == 0 && !x.write:
		return 0, io.EOF
	}
	return n, nil
}
