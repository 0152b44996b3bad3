package verbs

import "github.com/goiwarp/iwarp/internal/fpdu"

// Following the connection's MSS. RFC 5044 §4.1 sizes an FPDU to the
// TCP effective MSS, but the MSS Linux reports when a connection starts
// is bounded by half the largest window the peer has offered so far: on
// loopback (MTU 65,536) it reads 32,741 at first and 65,483 once a
// megabyte has flowed. A QP whose MULPDU was derived from the MSS
// (Setup.Params.MULPDU 0) therefore reads the MSS again after every
// mssRecheck octets it wrote and raises its MULPDU when the MSS grew, as
// Linux siw reads the MSS again for each work request. It never lowers
// it: an FPDU larger than a segment is still received whole.

// mssRecheck is the number of octets written between two readings of the
// MSS: one getsockopt per 256 KiB costs nothing measurable.
const mssRecheck = 256 << 10

// mssFollow is a QP's state for following the MSS: owned by QP.mu.
type mssFollow struct {
	on      bool // the MULPDU follows the MSS
	markers bool // the QP sends markers (they take room in each FPDU)
	written int  // octets written since the MSS was last read
}

// noteTxLocked counts n octets written and, every mssRecheck of them,
// reads the MSS and raises the Core's MULPDU to fit it. QP.mu is held;
// the reading is one non-blocking getsockopt(2).
func (q *QP) noteTxLocked(n int) {
	f := &q.mss
	if !f.on || n <= 0 {
		return
	}
	if f.written += n; f.written < mssRecheck {
		return
	}
	f.written = 0
	if emss := q.readMSS(); emss > 0 {
		q.core.RaiseMULPDU(fpdu.MULPDU(emss, f.markers))
	}
}

// MULPDU returns the largest ULPDU the QP sends now (0 before Start).
func (q *QP) MULPDU() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.core == nil {
		return 0
	}
	return q.core.MULPDU()
}
