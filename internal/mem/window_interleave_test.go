package mem

import (
	"fmt"
	"strings"
	"testing"
)

// An exhaustive test of small interleavings of accesses through a memory
// window with the Begins that end its binding, in the manner of
// interleave_test.go: each thread is a sequence of single atomic steps of
// the real code, and the explorer runs every interleaving from a fresh
// table. The parent's mutex is virtual (held by a parent Begin from its
// first step to its last); a step that may take it (a binding's detach,
// run by the functions a settle or an unbind returns) waits for it. The
// binding's and the window's mutexes are taken for real inside single
// steps.

type wworld struct {
	tab     *Table
	p       *Region
	w       *Window
	s       STag
	mu      int // thread holding the parent's virtual mutex, or -1
	threads []*wthread
	invs    []*Invalidation
	fired   []int
	trace   []string
	fail    string
}

type wthread struct {
	name    string
	pc      int
	step    func(w *wworld, t *wthread) int
	needsMu func(pc int) bool
	// the thread's own state
	v      *Region
	g      Gen
	s      uint32
	pinned bool
	passed bool
	settle bool
	fns    []func()
	begin  *beginOp
}

func (w *wworld) failf(format string, a ...any) {
	if w.fail == "" {
		w.fail = fmt.Sprintf(format, a...)
	}
}

func (w *wworld) register(inv *Invalidation) {
	i := len(w.invs)
	w.invs = append(w.invs, inv)
	w.fired = append(w.fired, 0)
	inv.OnDrained(func() { w.fired[i]++ })
}

// check: no Invalidation has drained while a reader holds a pin through
// the window (every Invalidation here ends the binding the readers pin).
func (w *wworld) check() {
	for i, inv := range w.invs {
		if w.fired[i] > 1 {
			w.failf("OnDrained of invalidation %d ran %d times", i, w.fired[i])
		}
		// A drain's functions run in a step of their own after the one that
		// drained it: OnDrained may lag Drained, never lead it.
		if w.fired[i] == 1 && !inv.Drained() {
			w.failf("invalidation %d: OnDrained ran before it drained", i)
		}
		if !inv.Drained() {
			continue
		}
		for _, t := range w.threads {
			if t.pinned {
				w.failf("invalidation %d (of %s) drained while %s holds a pin through the window (passed %v)", i, inv.r.kind(), t.name, t.passed)
			}
		}
	}
}

func (r *Region) kind() string {
	if r.window != nil {
		return "the binding"
	}
	return "the parent"
}

func (w *wworld) final() {
	for i, inv := range w.invs {
		if !inv.Drained() || w.fired[i] != 1 {
			w.failf("invalidation %d not drained at the end", i)
		}
	}
	if len(w.p.views) != 0 {
		w.failf("%d bindings left on the parent", len(w.p.views))
	}
	v := w.w.Binding()
	if lw := v.life.Load(); slotPins(lw, 0)|slotPins(lw, 1) != 0 || v.stale.Load() != 0 {
		w.failf("pins left on the binding: %x stale %d", lw, v.stale.Load())
	}
	if w.w.Bound() || v.Valid() {
		w.failf("window still bound at the end")
	}
}

// windowReader is PinRemote through the window's STag, step by step: the
// binding's load and pin, the binding's state word, the parent's state
// word and the check, then Unpin in three steps (the compare-and-swap, the
// settle under the binding's mutex, the drain's functions, which may take
// the parent's mutex).
func windowReader(name string) *wthread {
	return &wthread{
		name:    name,
		needsMu: func(pc int) bool { return pc == 5 },
		step: func(w *wworld, t *wthread) int {
			switch t.pc {
			case 0:
				t.v = w.w.view.Load()
				dead := t.v.dead
				g, ok := t.v.pinCurrent()
				if !ok {
					return -1
				}
				if dead {
					w.failf("%s pinned a binding that was unbound", t.name)
				}
				t.g, t.pinned = g, true
				return 1
			case 1:
				t.s = t.v.state.Load()
				return 2
			case 2:
				t.passed = t.v.parent.state.Load()&validBit != 0 && t.v.check(t.s, w.s, 1, AccessRemoteWrite, 0, 8) == OK
				return 3
			case 3:
				t.settle = t.v.unpin(t.g)
				t.pinned = false
				if !t.settle {
					return -1
				}
				return 4
			case 4:
				t.v.mu.Lock()
				t.fns = t.v.settleLocked()
				t.v.mu.Unlock()
				return 5
			default:
				runAll(t.fns)
				return -1
			}
		},
	}
}

// parentBeginThread is a Begin of the given kind on the parent, one step
// at a time under the parent's virtual mutex.
func parentBeginThread(name string, kind beginKind) *wthread {
	return &wthread{
		name:    name,
		needsMu: func(pc int) bool { return pc == 0 },
		step: func(w *wworld, t *wthread) int {
			switch t.pc {
			case 0:
				w.mu = windowIndexOf(w, t)
				var next uint32
				if kind == beginRekey {
					next = packState(uint8(w.p.state.Load())+1, true, w.p.Access())
				}
				if kind == beginDeregister {
					w.p.dead = true
				}
				t.begin = &beginOp{r: w.p, kind: kind, next: next}
				return 1
			default:
				if !t.begin.stepOnce() {
					return 1
				}
				w.mu = -1
				runAll(t.begin.fns)
				w.register(t.begin.inv)
				return -1
			}
		},
	}
}

// unbindThread is BeginUnbind: the unbind under the window's and the
// binding's mutexes, then the functions it returns (a drained binding's
// detach takes the parent's mutex).
func unbindThread(name string) *wthread {
	return &wthread{
		name:    name,
		needsMu: func(pc int) bool { return pc == 1 },
		step: func(w *wworld, t *wthread) int {
			switch t.pc {
			case 0:
				w.w.mu.Lock()
				inv, fns := w.w.unbindLocked()
				w.w.mu.Unlock()
				t.fns = fns
				t.begin = &beginOp{inv: inv}
				return 1
			default:
				runAll(t.fns)
				w.register(t.begin.inv)
				return -1
			}
		},
	}
}

func windowIndexOf(w *wworld, t *wthread) int {
	for i, x := range w.threads {
		if x == t {
			return i
		}
	}
	panic("thread not in world")
}

// windowReplay builds a parent and a window bound to it (outside the
// table's maps: the readers take the binding from the window, as
// PinRemote does after its lookup) and runs the schedule's steps.
func windowReplay(tab *Table, mk func() []*wthread, schedule []int) *wworld {
	p := &Region{table: tab, index: 0x123456, pd: 1, buf: make([]byte, 64)}
	p.state.Store(packState(0x78, true, parentAccess))
	p.life.Store(liveBit)
	win := &Window{table: tab, index: 0x123457, pd: 1, typ: WindowType1}
	win.key.Store(0x9a)
	win.anchor = &Region{table: tab, index: win.index, pd: 1, win: win}
	s, err := tab.Bind(win, p, 0, 64, AccessRemoteWrite)
	if err != nil {
		panic(err)
	}
	w := &wworld{tab: tab, p: p, w: win, s: s, mu: -1, threads: mk()}
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

func windowExplore(t *testing.T, name string, mk func() []*wthread) int {
	t.Helper()
	tab := NewTable(TableOptions{})
	var runs int
	var rec func(prefix []int) bool
	rec = func(prefix []int) bool {
		w := windowReplay(tab, mk, prefix)
		if w.fail != "" {
			t.Errorf("%s: %s\nschedule: %s", name, w.fail, strings.Join(w.trace, " "))
			return false
		}
		var enabled []int
		for i, th := range w.threads {
			if th.pc >= 0 && (!th.needsMu(th.pc) || w.mu == -1 || w.mu == i) {
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

// TestWindowInterleavings explores every interleaving of a remote access
// through a window with the parent's Begins and the window's unbind: no
// Invalidation that ends the binding drains while the access holds its
// pin, a binding once unbound is never pinned, and everything drains.
func TestWindowInterleavings(t *testing.T) {
	scenarios := []struct {
		name string
		mk   func() []*wthread
	}{
		{"Reader/ParentInvalidate", func() []*wthread {
			return []*wthread{windowReader("remote"), parentBeginThread("inval", beginInvalidate)}
		}},
		{"Reader/ParentDeregister", func() []*wthread {
			return []*wthread{windowReader("remote"), parentBeginThread("dereg", beginDeregister)}
		}},
		{"Reader/ParentRekey", func() []*wthread {
			return []*wthread{windowReader("remote"), parentBeginThread("rekey", beginRekey)}
		}},
		{"Reader/Unbind", func() []*wthread {
			return []*wthread{windowReader("remote"), unbindThread("unbind")}
		}},
		{"Reader/Unbind/ParentDeregister", func() []*wthread {
			return []*wthread{windowReader("remote"), unbindThread("unbind"), parentBeginThread("dereg", beginDeregister)}
		}},
		{"Reader/Unbind/ParentRekey", func() []*wthread {
			return []*wthread{windowReader("remote"), parentBeginThread("rekey", beginRekey), unbindThread("unbind")}
		}},
	}
	for _, s := range scenarios {
		n := windowExplore(t, s.name, s.mk)
		t.Logf("%s: %d interleavings", s.name, n)
		if n < 10 {
			t.Errorf("%s: only %d interleavings explored", s.name, n)
		}
	}
}
