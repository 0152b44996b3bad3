package rdmap

import (
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// simSide is one QP of the simulation with everything around its Core: the
// application's memory and model, the shell's connection state, the
// completion ledger and the monitor of what it sends.
type simSide struct {
	w    *simWorld
	idx  int
	name string
	peer *simSide
	core *Core
	srq  *RecvRing // the shared receive queue the shell keeps, or nil

	table *mem.Table
	pd    uint32
	mem   simMemory

	out, in *simPipe
	mon     *simMonitor // what this side sends

	iov   [][]byte
	rxIOV [][]byte // pumpRxVectored's scratch
	txTmp []byte
	comps []Completion

	// The ledger (sim_ledger_test.go).
	wrs       []*simWR // by ID-1
	sq, rq    []*simWR // accepted, in posting order (rq: the order receives are taken)
	sqDone    int      // sq[:sqDone] are complete (or implicitly so)
	rqDone    int
	consumers []*simWR // this side's WRs that consume a peer receive, in order
	posted    int
	completed int

	// What the peer may say in a Terminate because of what this side did
	// (sim_check_test.go): the codes its risky WRs may provoke.
	provokes []rdma.TermCode
	// anyTerminate: this side's own local protection failure makes any
	// Terminate code from it acceptable; the reason.
	anyTerminate string
	// lengthRisk: a Send too long for its receive was posted to this side
	// (a receive may complete with a local length error).
	lengthRisk bool

	// The shell's and the faults' state.
	closed       bool // the connection was closed (Core.WantClose)
	halfClosed   bool // its sending side was closed (Core.WantHalfClose)
	halfAt       int64
	dead         bool // the process died: nothing drives the Core any more
	txDetached   bool // a hostile input replaced this side's transmitter
	frozen       bool // the application posts nothing more
	stopReading  bool
	eofDelivered bool
	prog         uint64
	idle         int64 // idle steps the Core waited without progress
	disconnected bool  // the application called Disconnect or Close
	dying        bool  // the process dies inside the next FPDU it sends
	cutMidFPDU   bool
	// inject holds a hostile input still to be written (it replaced
	// this side's transmitter), then a FIN.
	inject []byte
	// resumeAt: a side that stopped reading for a while reads again then.
	resumeAt int64
	woken    int   // Config.Wake calls not yet answered by a Poll
	closeAt  int64 // when the shell acts on WantClose
}

func newSimSide(w *simWorld, i int) *simSide {
	s := &simSide{w: w, idx: i, name: simSideName(i), pd: 7 + uint32(i)}
	s.out, s.in = w.pipes[i], w.pipes[1-i]
	s.table = w.newTable(i)
	s.mem.init(s)
	c := &w.cfg
	s.mon = newSimMonitor(s, c.framing(i))
	return s
}

// start creates the Core (the peer's registrations exist by now).
func (s *simSide) start() {
	c := &s.w.cfg
	cfg := Config{
		Table: s.table, PD: s.pd,
		SQDepth: c.sqDepth[s.idx], RQDepth: c.rqDepth[s.idx], MaxSGE: c.maxSGE[s.idx], MaxInline: c.maxInline[s.idx],
		Params: c.params(s.idx), Framing: c.framing(s.idx),
		TxOff: c.txOff[s.idx], RxOff: c.txOff[1-s.idx],
		// An invalidation a completion waits for drained: the shell
		// drives the Core (a flag: Wake may run inside a Core call).
		Wake: func() { s.woken++ },
	}
	switch {
	case c.srq[s.idx]:
		s.srq = NewRecvRing(c.rqDepth[s.idx], c.maxSGE[s.idx], s.table, s.pd)
		cfg.Recv = s.srq
	case s.w.rng.IntN(3) == 0:
		// Receives posted before the connection is up, into the ring
		// that becomes the Core's own queue (Config.OwnRecv).
		ring := NewRecvRing(c.rqDepth[s.idx], c.maxSGE[s.idx], s.table, s.pd)
		for range 1 + s.w.rng.IntN(3) {
			s.postRecvsTo("RecvRing.Post", ring.Post, rdma.StateRTS)
		}
		cfg.OwnRecv = ring
	}
	core, err := New(cfg)
	if err != nil {
		s.w.failf("side %s: New: %v", s.name, err)
	}
	s.core = core
}
