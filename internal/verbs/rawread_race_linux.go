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

// rawReadv reads into bufs in order with read(2), one piece at a time so
// that the race detector sees each write, until a piece is not filled:
// the octets read add up as one readv(2) would report them.
func rawReadv(fd uintptr, bufs [][]byte, vec []syscall.Iovec) (int, syscall.Errno, []syscall.Iovec) {
	total := 0
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		n, e := rawRead(fd, b)
		if e != 0 {
			if total > 0 {
				return total, 0, vec
			}
			return 0, e, vec
		}
		total += n
		if n < len(b) {
			break
		}
	}
	return total, 0, vec
}
