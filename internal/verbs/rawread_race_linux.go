//go:build linux && !iwarp_portable && race

package verbs

import "syscall"

// rawRead is read(2) through syscall.Read under the race detector, which
// then sees the kernel write the buffer.
func rawRead(fd uintptr, b []byte) (int, syscall.Errno) {
	for {
		n, err := syscall.Read(int(fd), b)
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
