package engine

import (
	"sync/atomic"

	"github.com/goiwarp/iwarp/internal/wire"
)

// Counters count a QP's (or, shared by its QPs, a device's) traffic and
// events. Every field is updated with one atomic add off the hot path's
// allocation budget and read without locks.
type Counters struct {
	FPDUsSent, FPDUsReceived atomic.Uint64
	BytesSent, BytesReceived atomic.Uint64 // ULPDU bytes (DDP/RDMAP headers and payload)
	CRCErrors                atomic.Uint64
	RecvQueueEmpty           atomic.Uint64 // Sends that found no posted receive
	ORDStalls                atomic.Uint64 // times a Read or atomic waited for an ORD credit
	SiwTerminates            atomic.Uint64 // received Terminates in Linux siw's layout
	// FPDUsByWaiters are the received FPDUs that a goroutine blocked in a
	// wait read and handled itself, having borrowed the receive role
	// (rxrole.go), rather than the QP's receive goroutine.
	FPDUsByWaiters     atomic.Uint64
	termSent, termRecv [termSlots]atomic.Uint64
}

// termSlots: room for one counter per Terminate code of the spec tables
// (33), plus one for any other code; TestTermSlots checks it fits.
const termSlots = 40

func termIndex(c wire.TermCode) int {
	for i, k := range termCodes {
		if k == c {
			return i
		}
	}
	return termSlots - 1
}

var termCodes = wire.AllTermCodes()

// TermCount is how many Terminates of one code were sent or received.
type TermCount struct {
	Code           wire.TermCode
	Sent, Received uint64
	Other          bool // Code stands for every code outside the spec tables
}

// Terminates returns the non-zero Terminate counts.
func (c *Counters) Terminates() []TermCount {
	var out []TermCount
	for i := 0; i < termSlots; i++ {
		s, r := c.termSent[i].Load(), c.termRecv[i].Load()
		if s == 0 && r == 0 {
			continue
		}
		tc := TermCount{Sent: s, Received: r}
		if i == termSlots-1 {
			tc.Other = true
		} else {
			tc.Code = termCodes[i]
		}
		out = append(out, tc)
	}
	return out
}

// count adds to a QP's counters and its device's.
func (qp *QP) count(f func(*Counters)) {
	f(&qp.stats)
	if qp.cfg.DeviceCounters != nil {
		f(qp.cfg.DeviceCounters)
	}
}

// Stats returns the QP's counters.
func (qp *QP) Stats() *Counters { return &qp.stats }

// IRDInUse returns how many of the peer's Read and atomic requests are
// accepted and not yet fully answered.
func (qp *QP) IRDInUse() int {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.irdInUse
}

// ORDInUse returns how many of this side's Reads and atomics are
// outstanding.
func (qp *QP) ORDInUse() int {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.orq.len()
}

// appendFPDU appends a single-FPDU message (its ULPDU is b) and counts it.
func (qp *QP) appendFPDU(b []byte) error {
	if err := qp.conn.Writer().Append(b); err != nil {
		return err
	}
	qp.countSent(len(b))
	return nil
}
