package rdmap

import (
	"bytes"
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// TestRaiseMULPDU: raising the MULPDU in the middle of a message gives
// its later segments the new size, the segments already built keep
// theirs, a lower value changes nothing, and the Data Sink places the
// message whole.
func TestRaiseMULPDU(t *testing.T) {
	o := defaults()
	o.mulpdu = 1024
	table := mem.NewTable(mem.TableOptions{})
	a, b := newCore(t, table, o), newCore(t, table, o)
	const size = txBudget + 100<<10 // more than one TxBufs builds
	src := region(t, table, testPD, size, 0, 0)
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(i * 7)
	}
	dst := region(t, table, testPD, size, 0, mem.AccessLocalWrite|mem.AccessRemoteWrite)
	post(t, a, SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(src)}, Remote: rdma.RemoteBuffer{STag: uint32(dst.STag()), TO: dst.Base()}})

	var first []byte
	for _, buf := range a.TxBufs(nil) {
		first = append(first, buf...)
	}
	a.TxDone(len(first))
	if a.MULPDU() != 1024 {
		t.Fatalf("MULPDU %d before the raise", a.MULPDU())
	}
	a.RaiseMULPDU(8000)
	a.RaiseMULPDU(500) // lower: ignored
	if a.MULPDU() != 8000 {
		t.Fatalf("MULPDU %d after raising to 8000 and asking for 500", a.MULPDU())
	}
	rest := txAll(a)

	p := newPeer(t, o)
	before, after := p.recv(first), p.recv(rest)
	if len(before) == 0 || len(after) == 0 {
		t.Fatalf("%d FPDUs before the raise and %d after", len(before), len(after))
	}
	for _, u := range before {
		if len(u) > 1024 {
			t.Fatalf("an FPDU built before the raise has a %d-octet ULPDU", len(u))
		}
	}
	for i, u := range after {
		if len(u) > 8000 || (i < len(after)-1 && len(u) != 8000) {
			t.Fatalf("FPDU %d after the raise has a %d-octet ULPDU, want 8000 (less only for the last)", i, len(u))
		}
	}
	wantComps(t, poll(a), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1}})
	if took := rxAll(b, append(first, rest...), 1<<20); took != len(first)+len(rest) {
		t.Fatalf("the sink took %d of %d octets", took, len(first)+len(rest))
	}
	if !bytes.Equal(dst.Bytes(), src.Bytes()) {
		t.Fatal("the Write was not placed whole")
	}
	if b.State() != rdma.StateRTS {
		t.Fatalf("the sink is in %v", b.State())
	}

	c := newCore(t, table, o)
	c.RaiseMULPDU(1 << 20)
	if c.MULPDU() != 65535 {
		t.Fatalf("MULPDU %d after raising past the 16-bit length", c.MULPDU())
	}
}
