package iwarp

import (
	"sync"
	"sync/atomic"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/verbs"
	"github.com/goiwarp/iwarp/rdma"
)

// Counters count a QP's traffic and events (see rdma.Counters for each).
// The protocol core counts them as plain fields under the QP's lock, which
// QP.Stats takes briefly to copy them: nothing on the data path beyond an
// add per FPDU.
type Counters = rdma.Counters

// TerminateCount is how many Terminates of one code were sent and
// received; Other is set for the sum of the codes outside the RFC tables.
type TerminateCount = rdma.TerminateCount

// QPStats are a QP's counters and state.
type QPStats struct {
	Counters
	// Terminates lists, per Terminate code seen, how many were sent and
	// received.
	Terminates []TerminateCount
	// IRDInUse and ORDInUse are the peer's Read/atomic requests being
	// answered and this side's outstanding ones.
	IRDInUse, ORDInUse int
}

// DeviceStats are a Device's counters: the sums over every QP it has had,
// and its own events.
type DeviceStats struct {
	Counters
	// Terminates lists, per Terminate code seen on any of its QPs, how many
	// were sent and received.
	Terminates []TerminateCount
	// SRQLimitEvents counts SRQ limit events raised.
	SRQLimitEvents uint64
	// DroppedEvents counts events that found the event channel full.
	DroppedEvents uint64
}

// addTerminates sums the counts of from into to, by code.
func addTerminates(to []TerminateCount, from []TerminateCount) []TerminateCount {
next:
	for _, t := range from {
		for i := range to {
			if u := &to[i]; u.Code == t.Code && u.Other == t.Other {
				u.Sent += t.Sent
				u.Received += t.Received
				continue next
			}
		}
		to = append(to, t)
	}
	return to
}

// addQP sums a QP's counters into the Device's.
func (s *DeviceStats) addQP(c *rdmap.Counters) {
	s.Counters.Add(&c.Counters)
	s.Terminates = addTerminates(s.Terminates, c.Terminates())
}

// Stats returns the QP's counters.
func (qp *QP) Stats() QPStats {
	c := qp.e.Stats()
	return QPStats{Counters: c.Counters, Terminates: c.Terminates(), IRDInUse: qp.e.IRDInUse(), ORDInUse: qp.e.ORDInUse()}
}

// deviceStats are the Device's own counters.
type deviceStats struct {
	mu        sync.Mutex
	done      DeviceStats            // the sum over the QPs torn down
	live      map[*verbs.QP]struct{} // the QPs not torn down yet
	srqLimits atomic.Uint64
}

// started counts q among the Device's QPs.
func (ds *deviceStats) started(q *verbs.QP) {
	ds.mu.Lock()
	ds.live[q] = struct{}{}
	ds.mu.Unlock()
}

// finished moves q's counters into the sum of the QPs torn down.
func (ds *deviceStats) finished(q *verbs.QP) {
	c := q.Stats()
	ds.mu.Lock()
	if _, ok := ds.live[q]; ok {
		delete(ds.live, q)
		ds.done.addQP(&c)
	}
	ds.mu.Unlock()
}

// Stats returns the Device's counters: the sums over every QP it has had.
func (d *Device) Stats() DeviceStats {
	ds := &d.stats
	ds.mu.Lock()
	s := DeviceStats{Counters: ds.done.Counters, Terminates: addTerminates(nil, ds.done.Terminates)}
	for q := range ds.live {
		c := q.Stats()
		s.addQP(&c)
	}
	ds.mu.Unlock()
	s.SRQLimitEvents = ds.srqLimits.Load()
	s.DroppedEvents = d.ev.dropped.Load()
	return s
}
