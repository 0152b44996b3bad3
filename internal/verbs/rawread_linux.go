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
