package rdmap

import (
	"fmt"
	"strings"

	"github.com/goiwarp/iwarp/rdma"
)

// The simulation's trace: every event is folded into a 64-bit hash (two
// runs of a seed must give the same hash: TestSimReplay), and the last
// simTraceLen events are kept to print with a failure (all of them with
// -sim.trace).

// simEv is the kind of a trace event.
type simEv uint8

const (
	simEvPostSend    simEv = iota + 1 // a: WR id, b: op<<8 | flags
	simEvPostRefused                  // a: WR id, b: queue
	simEvPostRecv                     // a: WR id, b: length
	simEvTx                           // a: octets written, b: delay
	simEvRx                           // a: octets read
	simEvRxEOF                        // a: 1 if an error
	simEvComp                         // a: WR id, b: status<<8 | queue
	simEvRegister                     // a: STag
	simEvBegin                        // a: STag, b: kind
	simEvDrained                      // a: STag
	simEvRevoke                       // a: STag, b: holders
	simEvRekey                        // a: new STag
	simEvDisconnect                   //
	simEvClose                        //
	simEvFail                         // a: why
	simEvWantClose                    // a: 1 if it had unread input
	simEvTimeout                      //
	simEvFault                        // a: fault kind
	simEvInject                       // a: octets
	simEvTerminate                    // a: layer<<16 | type<<8 | code (seen on the wire)
	simEvPhase                        // a: phase
	simEvHalfClose                    //
)

var simEvNames = [...]string{
	simEvPostSend: "post-send", simEvPostRefused: "post-refused", simEvPostRecv: "post-recv", simEvTx: "tx", simEvRx: "rx",
	simEvRxEOF: "rx-eof", simEvComp: "completion", simEvRegister: "register", simEvBegin: "begin-invalidation",
	simEvDrained: "drained", simEvRevoke: "revoke", simEvRekey: "rekey", simEvDisconnect: "disconnect", simEvClose: "close",
	simEvFail: "fail", simEvWantClose: "want-close", simEvTimeout: "op-timeout", simEvFault: "fault", simEvInject: "inject",
	simEvTerminate: "terminate-on-wire", simEvPhase: "phase", simEvHalfClose: "half-close",
}

// simEvent is one trace entry.
type simEvent struct {
	step int64
	kind simEv
	side int8
	a, b uint64
	note string // set only when the trace is kept whole
}

const simTraceLen = 256

// ev records an event.
func (w *simWorld) ev(side int, kind simEv, a, b uint64) {
	w.simEvNote(side, kind, a, b, "")
}

// simEvNote records an event with a note (kept only for the printed trace).
func (w *simWorld) simEvNote(side int, kind simEv, a, b uint64, note string) {
	for _, x := range [...]uint64{uint64(w.now), uint64(kind), uint64(side), a, b} {
		w.hash = (w.hash ^ x) * 0x100000001b3
	}
	e := simEvent{step: w.now, kind: kind, side: int8(side), a: a, b: b, note: note}
	if w.keepTrace {
		w.trace = append(w.trace, e)
		return
	}
	w.ring[w.nev%simTraceLen] = e
	w.nev++
}

// traceText prints the last n events (all kept ones when n is 0).
func (w *simWorld) traceText(n int) string {
	evs := w.trace
	if !w.keepTrace {
		k := min(w.nev, simTraceLen)
		evs = make([]simEvent, 0, k)
		for i := w.nev - k; i < w.nev; i++ {
			evs = append(evs, w.ring[i%simTraceLen])
		}
	}
	if n > 0 && len(evs) > n {
		evs = evs[len(evs)-n:]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "last %d events (step side event a b):\n", len(evs))
	for _, e := range evs {
		name := "?"
		if int(e.kind) < len(simEvNames) {
			name = simEvNames[e.kind]
		}
		side := "-"
		if e.side >= 0 {
			side = simSideName(int(e.side))
		}
		fmt.Fprintf(&b, "  %6d %s %-18s %#x %#x", e.step, side, name, e.a, e.b)
		if e.note != "" {
			b.WriteString(" " + e.note)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func simSideName(i int) string { return string(rune('A' + i)) }

// simCover counts what one run exercised.
type simCover struct {
	ok        [rdma.OpReadV2 + 1][simVariantFlags + 1]int // successful WRs by operation and variant (OpRecv: receives)
	status    [rdma.StatusFatal + 1]int
	fault     [simNumFaults]int
	frozen    map[string]int // regions frozen after a drain, by what drained
	revoked   int            // invalidations that revoked leases
	refused   int            // malformed WRs refused with the right error
	injected  int            // hostile inputs sent
	srqTaken  int            // receives taken from a shared receive queue
	halfClose int
	cut       int // streams that ended inside an FPDU
}

// simVariantFlags are the flags that make a variant of an operation (the
// coverage counts each variant).
const simVariantFlags = rdma.Solicited | rdma.Invalidate | rdma.WithImmediate

// simVariantExists reports whether op with the variant flags f exists (a
// receive has no variants).
func simVariantExists(op rdma.Opcode, f rdma.SendFlags) bool {
	if op == rdma.OpRecv {
		return f == 0
	}
	return rdma.ValidFlags(op, f)
}

// simVariantName names op with the variant flags f (SendSEInvImm, say).
func simVariantName(op rdma.Opcode, f rdma.SendFlags) string {
	name := op.String()
	for _, v := range []struct {
		f    rdma.SendFlags
		name string
	}{{rdma.Solicited, "SE"}, {rdma.Invalidate, "Inv"}, {rdma.WithImmediate, "Imm"}} {
		if f&v.f != 0 {
			name += v.name
		}
	}
	return name
}

// add merges o into c.
func (c *simCover) add(o *simCover) {
	for i := range c.ok {
		for j := range c.ok[i] {
			c.ok[i][j] += o.ok[i][j]
		}
	}
	for i := range c.status {
		c.status[i] += o.status[i]
	}
	for i := range c.fault {
		c.fault[i] += o.fault[i]
	}
	if c.frozen == nil {
		c.frozen = map[string]int{}
	}
	for k, v := range o.frozen {
		c.frozen[k] += v
	}
	c.revoked += o.revoked
	c.refused += o.refused
	c.injected += o.injected
	c.srqTaken += o.srqTaken
	c.halfClose += o.halfClose
	c.cut += o.cut
}

// gaps lists what a long range of seeds must have exercised and did not.
func (c *simCover) gaps() []string {
	var g []string
	for op := rdma.OpSend; op <= rdma.OpReadV2; op++ {
		for f := range rdma.SendFlags(simVariantFlags + 1) {
			if f&^simVariantFlags != 0 || !simVariantExists(op, f) {
				continue
			}
			if c.ok[op][f] == 0 {
				g = append(g, "a successful "+simVariantName(op, f))
			}
		}
	}
	// rdma.StatusLocalLength and rdma.StatusFatal are defined but the Core (as the
	// engine) never reports them: a Send too long for its receive is a
	// Terminate, a broken connection a flush.
	for _, st := range []rdma.Status{rdma.StatusSuccess, rdma.StatusFlushed, rdma.StatusLocalProtection, rdma.StatusRemoteAccess, rdma.StatusRemoteOperation} {
		if c.status[st] == 0 {
			g = append(g, "a completion with status "+st.String())
		}
	}
	for f := simFault(1); f < simNumFaults; f++ {
		if c.fault[f] == 0 {
			g = append(g, "the fault "+f.String())
		}
	}
	for _, what := range []string{"deregistration", "invalidation", "re-key", "Local Invalidate", "Read with Invalidate", "remote invalidation"} {
		if c.frozen[what] == 0 {
			g = append(g, "a drained "+what)
		}
	}
	for what, n := range map[string]int{"a lease revoked": c.revoked, "a malformed WR refused": c.refused,
		"a hostile input": c.injected, "a receive from a shared queue": c.srqTaken, "a half-close": c.halfClose, "a stream cut inside an FPDU": c.cut} {
		if n == 0 {
			g = append(g, what)
		}
	}
	return g
}

// simStats counts what a range of seeds exercised, for the log line.
type simStats struct {
	cover                                        simCover
	seeds, failed, steps                         int
	clean, churn, risky, faults, hostile         int
	posted, completed, terminates, octets, fpdus int
}

func (s *simStats) add(w *simWorld) {
	s.seeds++
	if w.failure != "" {
		s.failed++
	}
	s.steps += int(w.now)
	s.cover.add(&w.cover)
	c := w.cfg
	switch {
	case c.hostile != nil:
		s.hostile++
	case c.fault != simFaultNone:
		s.faults++
	case c.risky:
		s.risky++
	case c.churn:
		s.churn++
	default:
		s.clean++
	}
	for _, sd := range w.sides {
		if sd == nil {
			continue
		}
		s.posted += sd.posted
		s.completed += sd.completed
		s.octets += int(sd.out.written)
		if sd.mon != nil {
			s.fpdus += sd.mon.fpdus
			if sd.mon.term != nil {
				s.terminates++
			}
		}
	}
}

func (s simStats) String() string {
	return fmt.Sprintf("%d failed; %d steps; runs: %d clean, %d with registration churn, %d with risky work requests, %d with network faults, %d with a hostile input; %d WRs posted, %d completed, %d FPDUs, %d octets, %d Terminates",
		s.failed, s.steps, s.clean, s.churn, s.risky, s.faults, s.hostile, s.posted, s.completed, s.fpdus, s.octets, s.terminates)
}
