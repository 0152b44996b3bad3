//go:build !linux || iwarp_portable

package verbs

// txRaw and iovecs are empty where there is no poller: the transmit
// goroutine uses blocking writes of the connection.
type (
	txRaw  struct{}
	iovecs struct{}
)

// txRawWait reports that writing through the RawConn with a wait for room
// is not available here: the caller uses blocking writes.
func (q *QP) txRawWait() bool { return false }
