package rdmap

import (
	"testing"

	"github.com/goiwarp/iwarp/rdma"
)

// TestPeerTerminateWhileWriting: the peer's Terminate arrives while the
// iovecs TxBufs handed out are being written; after TxDone nothing more is
// handed out (TxDone drops the rest and ends the leases), and the Send
// whose last octet did not go completes once, failed with the status the
// Terminate gives it.
func TestPeerTerminateWhileWriting(t *testing.T) {
	e := newTermEnv(t, defaults())
	src := region(t, e.table, testPD, 64<<10, 's', 0)
	post(t, e.c, SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(src)}})
	iov := e.c.TxBufs(nil)
	code := rdma.TermRDMAPInvalidSTag
	term := cat(untagged(7, true, 0, 2, 1, 0), []byte{byte(code.Layer())<<4 | byte(code.Type()), code.Code(), 0, 0})
	rxAll(e.c, e.p.frame(term), 64)
	e.c.TxDone(len(iov[0]) / 2)
	if e.c.WantTx() || len(txAll(e.c)) != 0 {
		t.Fatal("output after the peer's Terminate")
	}
	if !e.c.WantClose() {
		t.Fatalf("no WantClose after the peer's Terminate: %v", e.c.State())
	}
	e.c.Close()
	var got []Completion
	for _, c := range poll(e.c) {
		if c.Queue == SendQueue {
			got = append(got, c)
		}
	}
	if len(got) != 1 || got[0].ID != 1 || got[0].Status == rdma.StatusSuccess {
		t.Fatalf("completions %v, want the Send's once, failed", got)
	}
}
