package rdmap

import (
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// Findings of the simulation: Core behaviour that broke the contract,
// each reduced to a focused test. They run only with -sim.findings (so
// that CI stays green while the Core is being fixed); once a finding is
// fixed its test passes and the simulation checks the rule strictly.
// Run: go test ./internal/rdmap -run 'TestSimFinding' -sim.findings

// simFindingPair is two Cores joined by perfect in-memory pipes (every
// octet handed out is written and read at once), for the findings' short
// scripts.
type simFindingPair struct {
	t      testing.TB
	c      [2]*Core
	tables [2]*mem.Table
	regs   [2]*mem.Region
	bufs   [2][]byte
	wire   [2][]byte // octets written by side i, not yet read by the other
	shut   [2]bool   // side i half-closed its sending side
}

func newSimFindingPair(t testing.TB) *simFindingPair {
	p := &simFindingPair{t: t}
	for i := range 2 {
		p.tables[i] = mem.NewTable(mem.TableOptions{Random: simTableRandom(1, i)})
		p.bufs[i] = make([]byte, 4096)
		r, err := p.tables[i].Register(7, p.bufs[i], mem.AccessLocalWrite|mem.AccessRemoteRead|mem.AccessRemoteWrite, 0x1000)
		if err != nil {
			t.Fatal(err)
		}
		p.regs[i] = r
		c, err := New(Config{Table: p.tables[i], PD: 7, SQDepth: 8, RQDepth: 8, MaxSGE: 2, MaxInline: 64,
			Params: Params{IRD: 4, ORD: 4}, Framing: fpdu.Options{CRC: true}})
		if err != nil {
			t.Fatal(err)
		}
		p.c[i] = c
	}
	return p
}

// pump moves octets both ways until nothing moves. It reports, for each
// side, the octets its Core handed out after it had half-closed (they
// cannot be written: a shell's write fails with EPIPE).
func (p *simFindingPair) pump() (late [2]int) {
	for moved := true; moved; {
		moved = false
		for i, c := range p.c {
			iov := c.TxBufs(nil)
			n := simIovLen(iov)
			switch {
			case n > 0 && p.shut[i]:
				late[i] += n
				c.TxDone(0)
			case n > 0:
				for _, b := range iov {
					p.wire[i] = append(p.wire[i], b...)
				}
				c.TxDone(n)
				moved = true
			default:
				c.TxDone(0)
			}
			if !p.shut[i] && c.WantHalfClose() {
				p.shut[i] = true
			}
		}
		for i, c := range p.c {
			src := &p.wire[1-i]
			for len(*src) > 0 {
				b := c.RxBuf()
				if len(b) == 0 {
					break
				}
				k := copy(b, *src)
				*src = (*src)[k:]
				c.RxDone(k)
				moved = true
			}
		}
	}
	return late
}

// TestSimFindingOutputAfterHalfClose: B disconnects with nothing to do,
// so WantHalfClose is true at once and the shell half-closes; a Read
// Request of A's that crosses the FIN then makes B's Core hand out a Read
// Response, which can never be written (found by the simulation: seed 355
// with -sim.steps=47, a Disconnect mid-run while the peer still posts).
// Once it has asked for the half-close a Core must not produce output:
// the Request is one the peer sent after (or across) the FIN, and the
// peer's QP fails when the FIN and then the close arrive.
func TestSimFindingOutputAfterHalfClose(t *testing.T) {
	if !*simFindings {
		t.Skip("a simulation finding (Core output after WantHalfClose); run with -sim.findings")
	}
	p := newSimFindingPair(t)
	a, b := p.c[0], p.c[1]
	b.Disconnect()
	if late := p.pump(); late != [2]int{} {
		t.Fatalf("octets after the half-close before any Read: %v", late)
	}
	if !p.shut[1] {
		t.Fatal("B did not ask for the half-close after Disconnect with nothing to do")
	}
	wr := SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(p.regs[0]), Offset: 0, Length: 64}}, Remote: rdma.RemoteBuffer{STag: uint32(p.regs[1].STag()), TO: 0x1000}}
	if n, err := a.PostSend([]SendWR{wr}); n != 1 {
		t.Fatalf("PostSend: %d, %v", n, err)
	}
	if late := p.pump(); late[1] > 0 {
		t.Errorf("B's Core handed out %d octets after it asked for the half-close (state %v): they can only fail the write", late[1], b.State())
	}
}
