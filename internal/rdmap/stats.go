package rdmap

import "github.com/goiwarp/iwarp/rdma"

// Counters count a QP's traffic and events: package rdma's counters and
// the Terminates per code. They are plain integers updated under the
// shell's lock (the Core's only caller at a time); a shell that publishes
// them without its lock copies them first.
type Counters struct {
	rdma.Counters
	termSent, termRecv [termSlots]uint64
}

// termSlots: room for one counter per Terminate code of the spec tables
// (33), plus one for any other code; TestTermSlots checks it fits.
const termSlots = 40

var termCodes = rdma.AllTermCodes()

func termIndex(c rdma.TermCode) int {
	for i, k := range termCodes {
		if k == c {
			return i
		}
	}
	return termSlots - 1
}

// TermCount is how many Terminates of one code were sent or received.
type TermCount = rdma.TerminateCount

// Terminates returns the non-zero Terminate counts.
func (c *Counters) Terminates() []TermCount {
	var out []TermCount
	for i := 0; i < termSlots; i++ {
		s, r := c.termSent[i], c.termRecv[i]
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
