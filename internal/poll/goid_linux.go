//go:build linux && !iwarp_portable

package poll

import "runtime"

// goroutineID returns the calling goroutine's id, read from the first line
// of its stack trace ("goroutine 18 [running]:"). Close uses it, only when
// Ready is running on the Handle being closed, to tell a Close called from
// inside that Ready (which must not wait for itself) from one called
// elsewhere (which must wait for Ready to return). It returns 0 if the
// line cannot be read, which no goroutine's id is.
func goroutineID() uint64 {
	var buf [64]byte
	s := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(s) < len(prefix) || string(s[:len(prefix)]) != prefix {
		return 0
	}
	var id uint64
	for _, c := range s[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
