package mem

import (
	"fmt"
	"strings"
	"testing"
)

// An exhaustive test of small interleavings. Each scenario is a few
// threads, each a sequence of single atomic steps of the real code (a pin's
// compare-and-swap, the state word's load and check, one step of a Begin, a
// settle, a lease under the mutex). The explorer runs every interleaving of
// the threads' steps from a fresh table, one step at a time on one
// goroutine, and checks the rules after every step. A Begin runs with the
// region's mutex held in production: here it holds a virtual mutex from its
// first step to its last, and steps that take the mutex (settle, Lease,
// EndLease, the slow path of PinLeased, Revoke) wait for it.

// mworld is one run of a scenario.
type mworld struct {
	tab     *Table
	r       *Region
	g0      Gen  // the generation at the start
	s0      STag // the STag at the start
	mu      int  // thread holding the virtual mutex, or -1
	threads []*mthread
	invs    []*Invalidation // begun, in order
	fired   []int           // OnDrained runs per invalidation
	h       *holder
	trace   []string
	fail    string
}

// mthread is a thread of a scenario: step runs the step at pc and returns
// the next pc (-1 when done); needsMu says whether that step takes the
// mutex.
type mthread struct {
	name    string
	pc      int
	step    func(w *mworld, t *mthread) int
	needsMu func(pc int) bool
	ready   func(w *mworld) bool // nil: always ready
	// the thread's own state
	g       Gen  // the generation it pinned or leased
	pinned  bool // holds a transient pin of g
	leased  bool // holds a lease of g
	settle  bool // its unpin asked for a settle
	begin   *beginOp
	holdsMu bool
}

func (w *mworld) failf(format string, a ...any) {
	if w.fail == "" {
		w.fail = fmt.Sprintf(format, a...)
	}
}

// check tests the rules that hold after every step.
func (w *mworld) check() {
	lw := w.r.life.Load()
	for i, inv := range w.invs {
		if w.fired[i] > 1 {
			w.failf("OnDrained of invalidation %d ran %d times", i, w.fired[i])
		}
		if inv.Drained() != (w.fired[i] == 1) {
			w.failf("invalidation %d: Drained %v but OnDrained ran %d times", i, inv.Drained(), w.fired[i])
		}
		if !inv.Drained() {
			continue
		}
		for _, t := range w.threads {
			if (t.pinned || t.leased) && age(lw, t.g) >= age(lw, inv.old) {
				w.failf("invalidation of generation %d drained while %s holds generation %d (pinned %v, leased %v)", inv.old, t.name, t.g, t.pinned, t.leased)
			}
		}
	}
}

// final tests the rules that hold when every thread is done.
func (w *mworld) final() {
	for i, inv := range w.invs {
		if !inv.Drained() || w.fired[i] != 1 {
			w.failf("invalidation %d not drained at the end (OnDrained ran %d times)", i, w.fired[i])
		}
	}
	lw := w.r.life.Load()
	if slotPins(lw, 0)|slotPins(lw, 1) != 0 || w.r.stale.Load() != 0 || w.r.legacy.Load() != 0 {
		w.failf("pins left: word %x stale %d legacy %d", lw, w.r.stale.Load(), w.r.legacy.Load())
	}
	if lw&pendingBit != 0 || len(w.r.pending) != 0 || len(w.r.leases) != 0 || len(w.r.leaseGens) != 0 {
		w.failf("bookkeeping left: word %x pending %d leases %d", lw, len(w.r.pending), len(w.r.leases))
	}
}

// beginThread runs one Begin of the given kind under the virtual mutex and
// then registers an OnDrained counter.
func beginThread(name string, kind beginKind) *mthread {
	return &mthread{
		name:    name,
		needsMu: func(pc int) bool { return pc == 0 },
		step: func(w *mworld, t *mthread) int {
			switch t.pc {
			case 0:
				w.mu = indexOf(w, t)
				t.holdsMu = true
				var next uint32
				if kind == beginRekey {
					next = packState(uint8(w.r.state.Load())+1, true, w.r.Access())
				}
				t.begin = &beginOp{r: w.r, kind: kind, next: next}
				return 1
			case 1:
				if !t.begin.stepOnce() {
					return 1
				}
				w.mu, t.holdsMu = -1, false
				runAll(t.begin.fns)
				i := len(w.invs)
				w.invs = append(w.invs, t.begin.inv)
				w.fired = append(w.fired, 0)
				t.begin.inv.OnDrained(func() { w.fired[i]++ })
				return -1
			}
			panic("bad pc")
		},
	}
}

func indexOf(w *mworld, t *mthread) int {
	for i, x := range w.threads {
		if x == t {
			return i
		}
	}
	panic("thread not in world")
}

// unpinSteps are the two steps of Unpin: the compare-and-swap (pc) and the
// settle it may ask for (pc+1, under the mutex). It returns the next pc.
func unpinSteps(w *mworld, t *mthread, pc int) int {
	switch t.pc - pc {
	case 0:
		t.settle = w.r.unpin(t.g)
		t.pinned = false
		return t.pc + 1
	default:
		if t.settle {
			w.r.settle()
		}
		return -1
	}
}

// pinRemoteThread is PinRemote with the STag of the start (lookup and
// pin, then the check, then Unpin in two steps).
func pinRemoteThread(name string) *mthread {
	return &mthread{
		name:    name,
		needsMu: func(pc int) bool { return pc == 3 },
		step: func(w *mworld, t *mthread) int {
			switch t.pc {
			case 0:
				r := w.tab.lookup(w.s0.Index())
				g, ok := r.pinCurrent()
				if !ok {
					return -1
				}
				t.g, t.pinned = g, true
				return 1
			case 1:
				if why := w.r.check(w.r.state.Load(), w.s0, 1, AccessRemoteWrite, 0, 8); why == OK {
					// The old STag passes only before any Begin cleared the
					// state word, and then the pin is of the start's
					// generation.
					for _, o := range w.threads {
						if o.begin != nil && o.begin.step > 0 {
							w.failf("%s: the old STag passed after %s cleared the valid bit", t.name, o.name)
						}
					}
					if t.g != w.g0 {
						w.failf("%s: the old STag passed with a pin of generation %d", t.name, t.g)
					}
				}
				return 2
			default:
				return unpinSteps(w, t, 2)
			}
		},
	}
}

// pinThread is Pin of the start's generation, then Unpin.
func pinThread(name string) *mthread {
	return &mthread{
		name:    name,
		needsMu: func(pc int) bool { return pc == 2 },
		step: func(w *mworld, t *mthread) int {
			if t.pc == 0 {
				if !w.r.Pin(w.g0) {
					return -1
				}
				for _, o := range w.threads {
					if o.begin != nil && o.begin.step > 2 {
						w.failf("%s: Pin of generation %d after %s moved past it", t.name, w.g0, o.name)
					}
				}
				t.g, t.pinned = w.g0, true
				return 1
			}
			return unpinSteps(w, t, 1)
		},
	}
}

// leaseThread leases the start's generation, pins under the lease
// (PinLeased: Pin, then the slow path under the mutex), unpins and ends the
// lease.
func leaseThread(name string) *mthread {
	return &mthread{
		name:    name,
		needsMu: func(pc int) bool { return pc == 0 || pc == 2 || pc == 4 || pc == 5 },
		step: func(w *mworld, t *mthread) int {
			switch t.pc {
			case 0:
				if !w.r.Lease(w.g0, w.h) {
					return -1
				}
				t.g, t.leased = w.g0, true
				return 1
			case 1:
				if w.r.Pin(t.g) {
					t.pinned = true
					return 3
				}
				return 2
			case 2:
				if !w.r.pinLeasedSlow(t.g, w.h) {
					if w.h.revoked.Load() == 0 {
						w.failf("%s: PinLeased refused before any revocation", t.name)
					}
					return 5
				}
				if w.h.revoked.Load() != 0 {
					w.failf("%s: PinLeased accepted after the revocation", t.name)
				}
				t.pinned = true
				return 3
			case 3, 4:
				if unpinSteps(w, t, 3) == 4 {
					return 4
				}
				return 5
			case 5:
				w.r.EndLease(t.g, w.h)
				t.leased = false
				return -1
			}
			panic("bad pc")
		},
	}
}

// revokeThread waits for the first invalidation and revokes its holders.
func revokeThread(name string) *mthread {
	return &mthread{
		name:    name,
		needsMu: func(int) bool { return true },
		ready:   func(w *mworld) bool { return len(w.invs) > 0 },
		step: func(w *mworld, t *mthread) int {
			held := false
			for _, o := range w.threads {
				held = held || o.leased
			}
			n := w.invs[0].Revoke()
			if held && n != 1 || !held && n != 0 || w.h.revoked.Load() > 1 {
				w.failf("%s: Revoke reached %d holders with a lease held %v (revoked %d times)", t.name, n, held, w.h.revoked.Load())
			}
			return -1
		},
	}
}

// acquireThread is the engine's Acquire (the legacy count, then the check)
// and Release (the decrement, then the settle it may ask for).
func acquireThread(name string) *mthread {
	return &mthread{
		name:    name,
		needsMu: func(pc int) bool { return pc == 3 },
		step: func(w *mworld, t *mthread) int {
			switch t.pc {
			case 0:
				w.r.legacy.Add(1)
				return 1
			case 1:
				// Holding only if the check passes (else it releases at once).
				if w.r.check(w.r.state.Load(), w.s0, 1, AccessRemoteWrite, 0, 8) == OK {
					t.g, t.pinned = w.g0, true
				}
				return 2
			case 2:
				t.settle = w.r.legacy.Add(-1) == 0 && w.r.life.Load()&pendingBit != 0
				t.pinned = false
				return 3
			default:
				if t.settle {
					w.r.settle()
				}
				return -1
			}
		},
	}
}

// explore runs every interleaving of the scenario's threads.
func explore(t *testing.T, name string, mk func() []*mthread) int {
	t.Helper()
	tab := NewTable(TableOptions{})
	var runs int
	var rec func(prefix []int) bool
	rec = func(prefix []int) bool {
		w := replay(tab, mk, prefix)
		if w.fail != "" {
			t.Errorf("%s: %s\nschedule: %s", name, w.fail, strings.Join(w.trace, " "))
			return false
		}
		var enabled []int
		for i, th := range w.threads {
			if th.pc >= 0 && (!th.needsMu(th.pc) || w.mu == -1 || w.mu == i) && (th.ready == nil || th.ready(w)) {
				enabled = append(enabled, i)
			}
		}
		if len(enabled) == 0 {
			for _, th := range w.threads {
				if th.pc >= 0 {
					t.Errorf("%s: deadlock, %s at step %d\nschedule: %s", name, th.name, th.pc, strings.Join(w.trace, " "))
					return false
				}
			}
			w.final()
			if w.fail != "" {
				t.Errorf("%s: %s\nschedule: %s", name, w.fail, strings.Join(w.trace, " "))
				return false
			}
			runs++
			return true
		}
		for _, i := range enabled {
			if !rec(append(prefix[:len(prefix):len(prefix)], i)) {
				return false
			}
		}
		return true
	}
	rec(nil)
	return runs
}

// replay builds a fresh region in tab and runs the schedule's steps.
func replay(tab *Table, mk func() []*mthread, schedule []int) *mworld {
	const index = 0x123456
	r := &Region{table: tab, index: index, pd: 1, buf: make([]byte, 64)}
	r.state.Store(packState(0x78, true, AccessRemoteWrite|AccessLocalWrite))
	r.life.Store(liveBit)
	tab.store(index, r)
	w := &mworld{tab: tab, r: r, g0: r.Gen(), s0: r.STag(), mu: -1, threads: mk(), h: &holder{}}
	for _, i := range schedule {
		th := w.threads[i]
		w.trace = append(w.trace, fmt.Sprintf("%s.%d", th.name, th.pc))
		th.pc = th.step(w, th)
		w.check()
		if w.fail != "" {
			break
		}
	}
	return w
}

// TestInterleavings explores every interleaving of small scenarios of pins,
// leases and Begins.
func TestInterleavings(t *testing.T) {
	scenarios := []struct {
		name string
		mk   func() []*mthread
	}{
		{"PinRemote/Invalidate", func() []*mthread {
			return []*mthread{pinRemoteThread("remote"), beginThread("inval", beginInvalidate)}
		}},
		{"PinRemote/Rekey", func() []*mthread {
			return []*mthread{pinRemoteThread("remote"), beginThread("rekey", beginRekey)}
		}},
		{"PinRemote/Pin/Deregister", func() []*mthread {
			return []*mthread{pinRemoteThread("remote"), pinThread("local"), beginThread("dereg", beginDeregister)}
		}},
		{"Pin/Pin/Rekey", func() []*mthread {
			return []*mthread{pinThread("a"), pinThread("b"), beginThread("rekey", beginRekey)}
		}},
		{"Pin/Rekey/Rekey", func() []*mthread {
			return []*mthread{pinThread("local"), beginThread("rekey1", beginRekey), beginThread("rekey2", beginRekey)}
		}},
		{"PinRemote/Rekey/Invalidate", func() []*mthread {
			return []*mthread{pinRemoteThread("remote"), beginThread("rekey", beginRekey), beginThread("inval", beginInvalidate)}
		}},
		{"Lease/Deregister/Revoke", func() []*mthread {
			return []*mthread{leaseThread("lease"), beginThread("dereg", beginDeregister), revokeThread("revoke")}
		}},
		{"Lease/Rekey/Rekey", func() []*mthread {
			return []*mthread{leaseThread("lease"), beginThread("rekey1", beginRekey), beginThread("rekey2", beginRekey)}
		}},
		{"Acquire/Pin/Invalidate", func() []*mthread {
			return []*mthread{acquireThread("acquire"), pinThread("local"), beginThread("inval", beginInvalidate)}
		}},
	}
	for _, s := range scenarios {
		n := explore(t, s.name, s.mk)
		t.Logf("%s: %d interleavings", s.name, n)
		if n < 10 {
			t.Errorf("%s: only %d interleavings explored", s.name, n)
		}
	}
}
