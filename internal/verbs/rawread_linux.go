//go:build linux && !iwarp_portable && !race

package verbs

import (
	"syscall"
	"unsafe"
)

// rawRead makes one non-blocking read(2) into b, retried only after a
// signal (the socket is non-blocking: no scheduler round trip is needed).
func rawRead(fd uintptr, b []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), 0
	}
}

// rawReadv makes one non-blocking readv(2) into bufs, using vec as the
// iovec scratch (its capacity grows to the longest list, once). It
// returns the octets read and the scratch.
func rawReadv(fd uintptr, bufs [][]byte, vec []syscall.Iovec) (int, syscall.Errno, []syscall.Iovec) {
	vec = vec[:0]
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		v := syscall.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		vec = append(vec, v)
	}
	if len(vec) == 0 {
		return 0, 0, vec
	}
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READV, fd, uintptr(unsafe.Pointer(&vec[0])), uintptr(len(vec)))
		if e == syscall.EINTR {
			continue
		}
		clear(vec) // drop the references to the buffers
		if e != 0 {
			return 0, e, vec
		}
		return int(n), 0, vec
	}
}
