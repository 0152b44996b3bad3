package iwarp

import (
	"sync/atomic"

	"github.com/goiwarp/iwarp/internal/engine"
)

// Stats are the counters of a QP or of a Device (the sum over its QPs). They
// are read without locks and cost nothing on the data path beyond an atomic
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
	// FPDUsByWaiters counts the received FPDUs (of FPDUsReceived) that a
	// goroutine blocked in a blocking call or CQ wait read from the socket
	// and handled itself, instead of the QP's receive goroutine: the
	// network poller then wakes the waiter directly (docs/performance.md,
	// "Latency").
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

func snapshot(c *engine.Counters) Stats {
	s := Stats{
		FPDUsSent: c.FPDUsSent.Load(), FPDUsReceived: c.FPDUsReceived.Load(),
		BytesSent: c.BytesSent.Load(), BytesReceived: c.BytesReceived.Load(),
		CRCErrors: c.CRCErrors.Load(), RecvQueueEmpty: c.RecvQueueEmpty.Load(),
		ORDStalls: c.ORDStalls.Load(), SiwTerminates: c.SiwTerminates.Load(),
		FPDUsByWaiters: c.FPDUsByWaiters.Load(),
	}
	for _, t := range c.Terminates() {
		s.Terminates = append(s.Terminates, TerminateCount{Code: termCode(t.Code), Other: t.Other, Sent: t.Sent, Received: t.Received})
	}
	return s
}

// Stats returns the QP's counters.
func (qp *QP) Stats() Stats {
	s := snapshot(qp.e.Stats())
	s.IRDInUse, s.ORDInUse = qp.e.IRDInUse(), qp.e.ORDInUse()
	return s
}

// deviceStats are the Device's own counters.
type deviceStats struct {
	c         engine.Counters
	srqLimits atomic.Uint64
}

// Stats returns the Device's counters: the sums over every QP it has had.
func (d *Device) Stats() Stats {
	s := snapshot(&d.stats.c)
	s.SRQLimitEvents = d.stats.srqLimits.Load()
	s.DroppedEvents = d.ev.dropped.Load()
	return s
}
