package rdma

// Counters count a queue pair's traffic and events (a Device's are the sums
// over its QPs).
type Counters struct {
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
	// for a completion (a blocking call, or a CQ wait on a CQ only this QP
	// completes to) read from the connection itself, with no hand-off from
	// the Device's poller.
	FPDUsByWaiters uint64
}

// Add adds o's counts to c's.
func (c *Counters) Add(o *Counters) {
	c.FPDUsSent += o.FPDUsSent
	c.FPDUsReceived += o.FPDUsReceived
	c.BytesSent += o.BytesSent
	c.BytesReceived += o.BytesReceived
	c.CRCErrors += o.CRCErrors
	c.RecvQueueEmpty += o.RecvQueueEmpty
	c.ORDStalls += o.ORDStalls
	c.SiwTerminates += o.SiwTerminates
	c.FPDUsByWaiters += o.FPDUsByWaiters
}

// TerminateCount is how many Terminates of one code were sent and received.
// Other is set for the sum of the codes outside the RFC tables (Code is
// then not meaningful).
type TerminateCount struct {
	Code           TermCode
	Other          bool
	Sent, Received uint64
}
