//go:build !linux || iwarp_portable

package fpdu

import "net"

// EMSS returns the effective MSS of c. On this platform the socket option
// is not read: it returns DefaultEMSS.
func EMSS(c net.Conn) int { return DefaultEMSS }
