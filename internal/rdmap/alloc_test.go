package rdmap

import (
	"testing"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// The steady paths allocate nothing: posting and writing a Write (copied
// or leased), receiving Sends and Writes, and answering Read Requests and
// atomics, each with the completions polled and their slots released.

const allocRuns = 200

// allocs runs f allocRuns times (after one warm-up) and fails the test if
// it allocated.
func allocs(t *testing.T, what string, f func()) {
	t.Helper()
	if raceEnabled {
		f()
		return // the pools of the framing layer drop items at random under -race
	}
	if n := testing.AllocsPerRun(allocRuns, f); n != 0 {
		t.Errorf("%s: %v allocations per run", what, n)
	}
}

// sink writes everything TxBufs hands out and reports the octets.
type sink struct{ iov [][]byte }

func (s *sink) drain(c *Core) int {
	total := 0
	for {
		s.iov = c.TxBufs(s.iov[:0])
		if len(s.iov) == 0 {
			return total
		}
		n := 0
		for _, b := range s.iov {
			n += len(b)
		}
		c.TxDone(n)
		total += n
	}
}

// consume polls c's completions into comps and releases their slots.
func consume(c *Core, comps []Completion) []Completion {
	comps = c.Poll(comps[:0])
	for i := range comps {
		if comps[i].Queue == SendQueue {
			c.ReleaseSend(comps[i].Slot)
		} else {
			c.ReleaseRecv(comps[i].Slot)
		}
	}
	return comps
}

func TestAllocsPostWrite(t *testing.T) {
	for _, size := range []int{64, 64 << 10} {
		for _, f := range framings {
			o := defaults()
			o.framing = f.opts
			c, _, table := single(t, o)
			src := region(t, table, testPD, size, 'w', 0)
			wr := []SendWR{{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{sge(src)}, Remote: rdma.RemoteBuffer{STag: 9}}}
			var s sink
			comps := make([]Completion, 0, 4)
			allocs(t, f.name+" Write", func() {
				if _, err := c.PostSend(wr); err != nil {
					t.Fatal(err)
				}
				s.drain(c)
				if comps = consume(c, comps); len(comps) != 1 {
					t.Fatalf("completions %+v", comps)
				}
			})
		}
	}
}

// feeder hands a core a pre-framed stream, one FPDU at a time.
type feeder struct {
	stream []byte
	off    int
}

func (f *feeder) feed(c *Core, n int) {
	for end := f.off + n; f.off < end; {
		b := c.RxBuf()
		k := copy(b[:min(len(b), end-f.off)], f.stream[f.off:end])
		c.RxDone(k)
		f.off += k
	}
}

func TestAllocsReceive(t *testing.T) {
	for _, fr := range framings {
		o := defaults()
		o.framing = fr.opts
		o.rq = 4
		c, p, table := single(t, o)
		buf := region(t, table, testPD, 4096, 0, mem.AccessLocalWrite|mem.AccessRemoteWrite)
		// Sends (a new MSN each) and Writes, alternating.
		var ulpdus [][]byte
		for msn := uint32(1); msn <= allocRuns+1; msn++ {
			ulpdus = append(ulpdus, cat(untagged(3, true, 0, 0, msn, 0), make([]byte, 1000)),
				cat(tagged(0, true, stagOf(buf), buf.Base()), make([]byte, 3000)))
		}
		var sizes []int
		f := &feeder{}
		for _, u := range ulpdus {
			s := p.frame(u)
			f.stream = append(f.stream, s...)
			sizes = append(sizes, len(s))
		}
		recv := []RecvWR{{ID: 1, SGL: []rdma.SGE{sge(buf)}}}
		comps := make([]Completion, 0, 4)
		i := 0
		allocs(t, fr.name+" Send and Write", func() {
			if _, err := c.PostRecv(recv); err != nil {
				t.Fatal(err)
			}
			f.feed(c, sizes[i]+sizes[i+1])
			i += 2
			if comps = consume(c, comps); len(comps) != 1 || comps[0].Status != rdma.StatusSuccess {
				t.Fatalf("completions %+v (%v)", comps, c.Err())
			}
		})
	}
}

func TestAllocsResponder(t *testing.T) {
	for _, fr := range framings {
		o := defaults()
		o.framing = fr.opts
		c, p, table := single(t, o)
		src := region(t, table, testPD, 64<<10, 'r', mem.AccessRemoteRead|mem.AccessRemoteAtomic)
		var sizes []int
		f := &feeder{}
		for msn := uint32(1); msn <= 2*allocRuns+2; msn += 2 {
			for _, u := range [][]byte{
				cat(untagged(1, true, 0, 1, msn, 0), readReqHdr(0x77, 0, 64<<10, stagOf(src), src.Base())),
				atomicReq(msn+1, 0, stagOf(src), src.Base()),
			} {
				s := p.frame(u)
				f.stream = append(f.stream, s...)
				sizes = append(sizes, len(s))
			}
		}
		var s sink
		i := 0
		allocs(t, fr.name+" Read and FetchAdd responses", func() {
			f.feed(c, sizes[i]+sizes[i+1])
			i += 2
			if n := s.drain(c); n < 64<<10 || c.IRDInUse() != 0 {
				t.Fatalf("answered with %d octets (%v)", n, c.Err())
			}
		})
	}
}

func TestAllocsRequester(t *testing.T) {
	o := defaults()
	p := newOpPair(t, o)
	wrs := []SendWR{
		{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(p.local), Length: 8}}, Remote: rdma.RemoteBuffer{STag: stagOf(p.remote), TO: p.remote.Base()}},
		{ID: 2, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(p.local), Offset: 8, Length: 8}}, Remote: rdma.RemoteBuffer{STag: stagOf(p.remote), TO: p.remote.Base() + 8}, Add: 1},
	}
	var sa, sb sink
	ab, ba := &feeder{}, &feeder{}
	comps := make([]Completion, 0, 4)
	move := func(from *Core, s *sink, to *Core, f *feeder) {
		for {
			s.iov = from.TxBufs(s.iov[:0])
			if len(s.iov) == 0 {
				return
			}
			n := 0
			for _, b := range s.iov {
				f.stream = append(f.stream, b...)
				n += len(b)
			}
			from.TxDone(n)
			f.feed(to, n)
			f.stream, f.off = f.stream[:0], 0
		}
	}
	allocs(t, "Read and FetchAdd round trips", func() {
		if _, err := p.a.PostSend(wrs); err != nil {
			t.Fatal(err)
		}
		move(p.a, &sa, p.b, ab)
		move(p.b, &sb, p.a, ba)
		if comps = consume(p.a, comps); len(comps) != 2 {
			t.Fatalf("completions %+v", comps)
		}
	})
}
