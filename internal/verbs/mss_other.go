//go:build !linux || iwarp_portable

package verbs

// mssRead is empty where the MSS is not read.
type mssRead struct{}

// readMSS returns 0 here: the MULPDU stays what Start derived.
func (q *QP) readMSS() int { return 0 }
