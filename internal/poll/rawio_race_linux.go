//go:build linux && !iwarp_portable && race

package poll

import "syscall"

// do is the RawConn callback under the race detector, which cannot see
// what the kernel writes into memory: syscall.Read and syscall.Write tell
// it, so Readv and Writev become one read or write per slice, stopping at
// the first short one (the same octets move; only the system calls
// differ). It returns true: the caller never waits for the socket.
func (x *rawIO) do(fd uintptr) bool {
	if x.buf != nil {
		x.n, x.errno = x.once(int(fd), x.buf)
		return true
	}
	x.n, x.errno = 0, 0
	for _, b := range x.bufs[:x.span()] {
		if len(b) == 0 {
			continue
		}
		n, e := x.once(int(fd), b)
		if e != 0 {
			if x.n == 0 {
				x.errno = e
			}
			return true
		}
		x.n += n
		if n < len(b) || (n == 0 && !x.write) {
			return true
		}
	}
	return true
}

// once makes one read or write of b, retried only after a signal.
func (x *rawIO) once(fd int, b []byte) (int, syscall.Errno) {
	for {
		var n int
		var err error
		if x.write {
			n, err = syscall.Write(fd, b)
		} else {
			n, err = syscall.Read(fd, b)
		}
		if err == syscall.EINTR {
			continue
		}
		if e, ok := err.(syscall.Errno); ok {
			return 0, e
		}
		if err != nil {
			return 0, syscall.EIO
		}
		return n, 0
	}
}

// span is how many slices of bufs setVec described: those up to its
// IOV_MAX-th non-empty one.
func (x *rawIO) span() int {
	seen := 0
	for i, b := range x.bufs {
		if len(b) == 0 {
			continue
		}
		if seen++; seen == len(x.iov) {
			return i + 1
		}
	}
	return len(x.bufs)
}
