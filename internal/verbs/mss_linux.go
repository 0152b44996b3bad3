//go:build linux && !iwarp_portable

package verbs

import "syscall"

// mssRead is readMSS's RawConn.Control callback and its result, bound
// once so that reading the MSS does not allocate. Owned by QP.mu.
type mssRead struct {
	fn  func(fd uintptr)
	mss int
}

// readMSS returns the connection's MSS (TCP_MAXSEG), or 0 if it cannot
// be read. QP.mu is held.
func (q *QP) readMSS() int {
	if q.rc == nil {
		return 0
	}
	r := &q.mssRead
	if r.fn == nil {
		r.fn = func(fd uintptr) {
			v, err := syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG)
			if err != nil {
				v = 0
			}
			r.mss = v
		}
	}
	r.mss = 0
	if q.rc.Control(r.fn) != nil {
		return 0
	}
	return r.mss
}
