package verbs

import "testing"

// An exhaustive check of the token protocol over every interleaving of a
// few goroutines (the real code's -race tests see only the schedules that
// happen to run). The model is kickTx's loop, step by step, each step one
// atomic action of the code:
//
//	post:    pending++                       (Core.PostSend under QP.mu)
//	take:    if !CAS(tok, false, true) exit  (txTok.CompareAndSwap)
//	work:    pending = 0                     (TxBufs/TxDone under QP.mu)
//	release: tok = false                     (txTok.Store(false))
//	check:   if pending > 0 goto take, else exit  (txWantedLocked)
//
// Every goroutine posts once and then runs the loop; whatever the
// schedule, when all have exited nothing may be pending: whoever releases
// last does what was left. The same holds for the receive token, whose
// "check" is the Arm after the release (the poller reports bytes that
// arrived meanwhile). A variant that looks before it releases must fail,
// so that the check can fail.

type tokStep uint8

const (
	stPost tokStep = iota
	stTake
	stWork
	stRelease
	stCheck
	stDone
)

// tokModel is the shared state and each goroutine's program counter.
type tokModel struct {
	pending int
	tok     bool
	pc      []tokStep
}

// step runs goroutine g's next action. checkFirst models the wrong order
// (look at the work, then release).
func (m *tokModel) step(g int, checkFirst bool) {
	switch m.pc[g] {
	case stPost:
		m.pending++
		m.pc[g] = stTake
	case stTake:
		if m.tok {
			m.pc[g] = stDone
			return
		}
		m.tok = true
		m.pc[g] = stWork
	case stWork:
		m.pending = 0
		if checkFirst {
			m.pc[g] = stCheck
		} else {
			m.pc[g] = stRelease
		}
	case stRelease:
		m.tok = false
		if checkFirst {
			m.pc[g] = stDone // looked already
		} else {
			m.pc[g] = stCheck
		}
	case stCheck:
		switch {
		case checkFirst && m.pending > 0:
			m.pc[g] = stWork // still holding the token
		case checkFirst:
			m.pc[g] = stRelease
		case m.pending > 0:
			m.pc[g] = stTake
		default:
			m.pc[g] = stDone
		}
	}
}

// explore runs every interleaving from m and returns how many final
// states it reached and how many of them left work pending.
func explore(m tokModel, checkFirst bool, depth int) (ends, stranded int) {
	if depth > 64 {
		panic("the model does not terminate")
	}
	running := false
	for g := range m.pc {
		if m.pc[g] == stDone {
			continue
		}
		running = true
		next := tokModel{pending: m.pending, tok: m.tok, pc: append([]tokStep(nil), m.pc...)}
		next.step(g, checkFirst)
		e, s := explore(next, checkFirst, depth+1)
		ends += e
		stranded += s
	}
	if !running {
		ends = 1
		if m.pending > 0 {
			stranded = 1
		}
	}
	return ends, stranded
}

func TestTokenReleaseThenRecheck(t *testing.T) {
	for goroutines := 1; goroutines <= 3; goroutines++ {
		start := tokModel{pc: make([]tokStep, goroutines)}
		ends, stranded := explore(start, false, 0)
		if stranded != 0 {
			t.Errorf("%d goroutines: %d of %d schedules strand work", goroutines, stranded, ends)
		}
		t.Logf("%d goroutines: %d schedules, none strands work", goroutines, ends)
		if goroutines > 1 {
			if _, s := explore(start, true, 0); s == 0 {
				t.Errorf("%d goroutines: looking before releasing strands no work: the check cannot fail", goroutines)
			}
		}
	}
}
