//go:build !linux || iwarp_portable

package fpdu

import "net"

// rawWriter has no non-blocking write on this platform: TryFlush reports
// that nothing was written and callers fall back to Flush.
type rawWriter struct{}

func (x *rawWriter) init(net.Conn) {}

func (x *rawWriter) writev(net.Buffers) (int, error) { return 0, nil }
