//go:build !linux || race || iwarp_portable

package fpdu

import "net"

// rawReader is the portable stand-in for the Linux readv path: ok is
// false, so the Reader reads a large payload with one Read into the
// caller's slice and its trailer through the staging buffer. It is also
// used under the race detector, which sees these writes.
type rawReader struct {
	ok bool
	c  net.Conn
}

func (x *rawReader) init(c net.Conn) { x.c = c }

// readv reads into a only; the Reader does not call it while ok is false.
func (x *rawReader) readv(a, _ []byte) (na, nb int, err error) {
	na, err = x.c.Read(a)
	return na, 0, err
}

// read reads into p; the Reader does not call it while ok is false.
func (x *rawReader) read(p []byte) (int, error) { return x.c.Read(p) }
