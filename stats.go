package iwarp

import (
	"sync"
	"sync/atomic"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/verbs"
)

// Stats are the counters of a QP or of a Device (the sum over its QPs). The
// protocol core counts them as plain fields under the QP's lock, which
// QP.Stats takes briefly to copy them: nothing on the data path beyond an
// add per FPDU.
type Stats struct {
	FPDUsSent, FPDUsReceived uint64
	// BytesSent and BytesReceived count ULPDU bytes: DDP and RDMAP headers
	// and payload, without MPA framing.
	BytesSent, BytesReceived uint64
	// CRCErrors counts received FPDUs whose MPA CRC did not match.
	CRCErrors uint64
	// RecvQueueEmpty counts Sends (or Immediate Data) that found no posted
	// receive: each is fatal to its connection (Terminate DDP/2/0x02).
	RecvQueueEmpty uint64
	// ORDStalls counts the times a Read or atomic waited for an ORD credit.
	ORDStalls uint64
	// SiwTerminates counts received Terminates in Linux siw's layout.
	SiwTerminates uint64
	// FPDUsByWaiters counts the received FPDUs that a goroutine waiting
	// for a completion (a blocking call, or CQ.Wait on a CQ only this QP
	// completes to) read from the connection itself, with no hand-off
	// from the Device's poller (docs/architecture.md, "The reading
	// waiter").
	FPDUsByWaiters uint64
	// Terminates lists, per Terminate code seen, how many were sent and
	// received.
	Terminates []TerminateCount
	// IRDInUse and ORDInUse (QP only) are the peer's Read/atomic requests
	// being answered and this side's outstanding ones.
	IRDInUse, ORDInUse int
	// SRQLimitEvents (Device only) counts SRQ limit events raised.
	SRQLimitEvents uint64
	// DroppedEvents (Device only) counts events that found the event
	// channel full.
	DroppedEvents uint64
}

// TerminateCount is how many Terminates of one code were sent and received.
// Other is set for the sum of the codes outside the RFC tables.
type TerminateCount struct {
	Code           TermCode
	Other          bool
	Sent, Received uint64
}

// snapshot converts a QP's counters (plus extra, summed in).
func snapshot(c *rdmap.Counters) Stats {
	s := Stats{
		FPDUsSent: c.FPDUsSent, FPDUsReceived: c.FPDUsReceived,
		BytesSent: c.BytesSent, BytesReceived: c.BytesReceived,
		CRCErrors: c.CRCErrors, RecvQueueEmpty: c.RecvQueueEmpty,
		ORDStalls: c.ORDStalls, SiwTerminates: c.SiwTerminates,
		FPDUsByWaiters: c.FPDUsByWaiters,
	}
	for _, t := range c.Terminates() {
		s.Terminates = append(s.Terminates, TerminateCount{Code: t.Code, Other: t.Other, Sent: t.Sent, Received: t.Received})
	}
	return s
}

// add sums o into s (the Device's counters over its QPs).
func (s *Stats) add(o *Stats) {
	s.FPDUsSent += o.FPDUsSent
	s.FPDUsReceived += o.FPDUsReceived
	s.BytesSent += o.BytesSent
	s.BytesReceived += o.BytesReceived
	s.CRCErrors += o.CRCErrors
	s.RecvQueueEmpty += o.RecvQueueEmpty
	s.ORDStalls += o.ORDStalls
	s.SiwTerminates += o.SiwTerminates
	s.FPDUsByWaiters += o.FPDUsByWaiters
next:
	for _, t := range o.Terminates {
		for i := range s.Terminates {
			if u := &s.Terminates[i]; u.Code == t.Code && u.Other == t.Other {
				u.Sent += t.Sent
				u.Received += t.Received
				continue next
			}
		}
		s.Terminates = append(s.Terminates, t)
	}
}

// Stats returns the QP's counters.
func (qp *QP) Stats() Stats {
	c := qp.e.Stats()
	s := snapshot(&c)
	s.IRDInUse, s.ORDInUse = qp.e.IRDInUse(), qp.e.ORDInUse()
	return s
}

// deviceStats are the Device's own counters.
type deviceStats struct {
	mu        sync.Mutex
	done      Stats                  // the sum over the QPs torn down
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
	s := snapshot(&c)
	ds.mu.Lock()
	if _, ok := ds.live[q]; ok {
		delete(ds.live, q)
		ds.done.add(&s)
	}
	ds.mu.Unlock()
}

// Stats returns the Device's counters: the sums over every QP it has had.
func (d *Device) Stats() Stats {
	ds := &d.stats
	ds.mu.Lock()
	var s Stats
	s.add(&ds.done)
	for q := range ds.live {
		c := q.Stats()
		qs := snapshot(&c)
		s.add(&qs)
	}
	ds.mu.Unlock()
	s.SRQLimitEvents = ds.srqLimits.Load()
	s.DroppedEvents = d.ev.dropped.Load()
	return s
}
