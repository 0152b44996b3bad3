package target

import (
	"os"
	"syscall"
)

// Modes of fallocate(2).
const (
	fallocKeepSize  = 0x01 // FALLOC_FL_KEEP_SIZE
	fallocPunchHole = 0x02 // FALLOC_FL_PUNCH_HOLE
)

// punchHole deallocates n bytes from off of f, which then read as zeros;
// it fails where the file system cannot (the caller writes zeros then).
func punchHole(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		ferr = syscall.Fallocate(int(fd), fallocKeepSize|fallocPunchHole, off, n)
	}); err != nil {
		return err
	}
	return ferr
}
