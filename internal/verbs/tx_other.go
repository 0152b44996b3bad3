//go:build !linux || iwarp_portable

package verbs

import "github.com/goiwarp/iwarp/internal/poll"

// txRaw and iovecs are empty where there is no poller: the transmit
// goroutine uses blocking writes of the connection.
type (
	txRaw  struct{}
	iovecs struct{}
)

// txRawWait reports that writing through the RawConn with a wait for room
// is not available here: the caller uses blocking writes.
func (q *QP) txRawWait() bool { return false }

// rawIO: the non-blocking system calls through a connection's RawConn are
// not available here: a QP without a poller reads with rxBlocking and
// writes with its transmit goroutine's blocking writes.
const rawIO = false

// txTry is never called here (rawIO is false).
func (q *QP) txTry() (int, error) { return 0, poll.ErrUnsupported }

// rxWaiting is the blocking receive goroutine here (rawIO is false).
func (q *QP) rxWaiting() { q.rxBlocking() }

// iovScratch is unused where rxWaiting does not read with readv(2).
type iovScratch = struct{}
