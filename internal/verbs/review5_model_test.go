package verbs

import (
	"fmt"
	"testing"
)

// An exhaustive check of the receive token's hand-over between the
// poller's Ready and reading waiters (rx.go, waitread_linux.go) over every
// interleaving of their atomic actions, the kernel's one-shot epoll
// registration and a peer sending: whatever the schedule, when everyone
// has stopped no octet may sit in the socket with the registration
// disarmed (nobody would ever read it), and no two goroutines may read at
// once. The model, one line per atomic action of the code:
//
//	kernel:  registration armed and octets queued: disarm it, the
//	         poller's goroutine will call Ready (level-triggered: an
//	         event whose octets were read before epoll_wait took it is
//	         dropped)
//	Ready:   rxMissed = true; CAS(token) or leave; read everything;
//	         rxRelease(spent=true)
//	waiter:  CAS(token) or leave; rdDisarmed = false; then, any number
//	         of times: read everything, and either leave (its completion
//	         is there) or disarm (once) and park until octets come or an
//	         interrupt; leave: rxRelease(spent=rdDisarmed)
//	release: token = false; spent |= Swap(rxMissed, false); if spent Arm
//
// Start is modeled too: it publishes the Handle of a socket registered
// disarmed, holding the token (76e36f1), and gives it back with
// rxRelease(true). Variants of the code that drop one of the rules must
// strand octets, or free a token its holder still reads with, so that the
// check can fail.

// rxVariant is a deliberate departure from the code, or none.
type rxVariant uint8

const (
	rxAsCoded        rxVariant = iota
	rxMissedAfterCAS           // Ready sets rxMissed after its CAS failed
	rxSwapFirst                // rxRelease swaps rxMissed before it frees the token
	rxNoMissed                 // Ready never sets rxMissed
	rxWaiterNotSpent           // the waiter releases with spent=false even after it disarmed
	rxStartUntaken             // Start publishes the Handle without taking the token (before 76e36f1)
)

// rxModel is one state: the shared variables and each goroutine's program
// counter and locals.
type rxModel struct {
	data   int8 // octets (messages) queued in the socket
	sends  int8 // messages the peer has still to send
	armed  bool // the registration reports readability
	tok    bool
	missed bool
	holder int8 // who holds the token: -1 nobody, 0 Ready, 1+i waiter i

	rp     int8 // Ready's program counter (0: the poller waits)
	wp     [2]int8
	wDis   [2]bool // rdDisarmed
	wSpent [2]bool // rxRelease's spent
	wParks [2]int8
	sp     int8 // Start's program counter (sDone: no Start modeled)
}

// Program counters.
const (
	rIdle int8 = iota
	rStoreMissed
	rCAS
	rLateMissed // rxMissedAfterCAS only
	rRead
	rRelStore
	rRelSwap
	rRelArm
)

const (
	sPublish int8 = iota // store the Handle (registered disarmed)
	sRelStore
	sRelSwap
	sRelArm
	sDone
)

// startHolder is Start as the token's holder.
const startHolder = 9

const (
	wStart int8 = iota
	wTop        // loop top: leave or read
	wEmpty      // read to empty: leave, or park
	wParked
	wRelStore
	wRelSwap
	wRelArm
	wDone
)

// rxExplore is the search: it records every state seen and the first
// problem found.
type rxExplore struct {
	v        rxVariant
	waiters  int
	maxParks int8
	seen     map[rxModel]bool
	ends     int
	stranded int
	doubles  int
	example  string
}

func (x *rxExplore) fail(kind *int, m rxModel, what string) {
	*kind++
	if x.example == "" {
		x.example = fmt.Sprintf("%s in %+v", what, m)
	}
}

// successors returns the states one action leads to.
func (x *rxExplore) successors(m rxModel) []rxModel {
	var out []rxModel
	add := func(n rxModel) { out = append(out, n) }
	// The peer.
	if m.sends > 0 {
		n := m
		n.sends--
		n.data++
		add(n)
	}
	// The kernel and Ready.
	switch m.rp {
	case rIdle:
		if m.armed && m.data > 0 {
			n := m
			n.armed = false
			n.rp = rStoreMissed
			add(n)
		}
	case rStoreMissed:
		n := m
		if x.v != rxMissedAfterCAS && x.v != rxNoMissed {
			n.missed = true
		}
		n.rp = rCAS
		add(n)
	case rCAS:
		n := m
		switch {
		case !m.tok:
			n.tok, n.holder, n.rp = true, 0, rRead
		case x.v == rxMissedAfterCAS:
			n.rp = rLateMissed
		default:
			n.rp = rIdle
		}
		add(n)
	case rLateMissed:
		n := m
		n.missed = true
		n.rp = rIdle
		add(n)
	case rRead:
		n := m
		if m.holder != 0 {
			x.fail(&x.doubles, m, "Ready reads without the token")
		}
		n.data = 0
		n.rp = rRelStore
		if x.v == rxSwapFirst {
			n.rp = rRelSwap
		}
		add(n)
	case rRelStore:
		n := m
		n.tok, n.holder = false, -1
		n.rp = rRelSwap
		if x.v == rxSwapFirst {
			n.rp = rRelArm
		}
		add(n)
	case rRelSwap:
		n := m
		n.missed = false
		n.rp = rRelArm
		if x.v == rxSwapFirst {
			n.rp = rRelStore
		}
		add(n)
	case rRelArm:
		n := m
		n.armed = true
		n.rp = rIdle
		add(n)
	}
	// Start, from the Handle's publication to startReading's
	// rxRelease(true).
	switch m.sp {
	case sPublish:
		n := m
		if x.v != rxStartUntaken {
			n.tok, n.holder = true, startHolder
		}
		n.sp = sRelStore
		add(n)
	case sRelStore:
		n := m
		if m.holder != startHolder && m.holder != -1 {
			x.fail(&x.doubles, m, "Start frees a token it does not hold")
		}
		if m.holder == startHolder {
			n.holder = -1
		}
		n.tok = false
		n.sp = sRelSwap
		add(n)
	case sRelSwap:
		n := m
		n.missed = false
		n.sp = sRelArm
		add(n)
	case sRelArm:
		n := m
		n.armed = true
		n.sp = sDone
		add(n)
	}
	// The waiters (who see the Handle once Start published it).
	for i := 0; i < x.waiters && m.sp != sPublish; i++ {
		me := int8(1 + i)
		leave := func(n rxModel) rxModel {
			n.wSpent[i] = n.wDis[i] && x.v != rxWaiterNotSpent
			n.wp[i] = wRelStore
			if x.v == rxSwapFirst {
				n.wp[i] = wRelSwap
			}
			return n
		}
		switch m.wp[i] {
		case wStart:
			n := m
			if m.tok {
				n.wp[i] = wDone
			} else {
				n.tok, n.holder, n.wDis[i], n.wp[i] = true, me, false, wTop
			}
			add(n)
		case wTop:
			add(leave(m))
			n := m
			if m.holder != me {
				x.fail(&x.doubles, m, fmt.Sprintf("waiter %d reads without the token", i))
			}
			n.data = 0
			n.wp[i] = wEmpty
			add(n)
		case wEmpty:
			add(leave(m))
			if m.wParks[i] < x.maxParks {
				n := m
				if !n.wDis[i] {
					n.wDis[i] = true
					n.armed = false // Disarm
				}
				n.wp[i] = wParked
				add(n)
			}
		case wParked:
			// Octets end the park; so does an interrupt (a completion
			// handed over by someone else, the context), at any time.
			n := m
			n.wParks[i]++
			n.wp[i] = wTop
			add(n)
		case wRelStore:
			n := m
			if m.holder != me {
				x.fail(&x.doubles, m, fmt.Sprintf("waiter %d frees a token it does not hold", i))
			}
			n.tok, n.holder = false, -1
			n.wp[i] = wRelSwap
			if x.v == rxSwapFirst {
				n.wp[i] = wRelArm
			}
			add(n)
		case wRelSwap:
			n := m
			n.wSpent[i] = n.wSpent[i] || m.missed
			n.missed = false
			n.wp[i] = wRelArm
			if x.v == rxSwapFirst {
				n.wp[i] = wRelStore
			}
			add(n)
		case wRelArm:
			n := m
			if n.wSpent[i] {
				n.armed = true
			}
			n.wp[i] = wDone
			add(n)
		}
	}
	return out
}

func (x *rxExplore) walk(m rxModel) {
	if x.seen[m] {
		return
	}
	x.seen[m] = true
	next := x.successors(m)
	if len(next) == 0 {
		x.ends++
		if m.data > 0 {
			x.fail(&x.stranded, m, "octets left with nobody to read them")
		}
		return
	}
	for _, n := range next {
		x.walk(n)
	}
}

// rxCheck explores every schedule of waiters reading waiters, the poller
// and a peer sending sends messages, from a socket armed with the token
// free, or withStart from Start publishing the Handle of a socket
// registered disarmed.
func rxCheck(v rxVariant, waiters int, sends int8, maxParks int8, withStart bool) *rxExplore {
	x := &rxExplore{v: v, waiters: waiters, maxParks: maxParks, seen: make(map[rxModel]bool)}
	start := rxModel{sends: sends, armed: true, holder: -1, sp: sDone}
	if withStart {
		start.armed, start.sp = false, sPublish
	}
	for i := waiters; i < len(start.wp); i++ {
		start.wp[i] = wDone
	}
	x.walk(start)
	return x
}

func TestReview5RxTokenModel(t *testing.T) {
	for _, withStart := range []bool{false, true} {
		for waiters := 1; waiters <= 2; waiters++ {
			for sends := int8(1); sends <= 3; sends++ {
				x := rxCheck(rxAsCoded, waiters, sends, 2, withStart)
				if x.stranded != 0 || x.doubles != 0 {
					t.Errorf("Start %v, %d waiters, %d sends: %d of %d schedules strand octets, %d read without the token; e.g. %s",
						withStart, waiters, sends, x.stranded, x.ends, x.doubles, x.example)
				}
				t.Logf("Start %v, %d waiters, %d sends: %d states, %d final, none strands octets", withStart, waiters, sends, len(x.seen), x.ends)
			}
		}
	}
	if x := rxCheck(rxStartUntaken, 1, 1, 2, true); x.doubles == 0 {
		t.Error("a Start that publishes the Handle without the token frees no waiter's token: the check cannot fail")
	} else {
		t.Logf("Start without the token: %d violations, e.g. %s", x.doubles, x.example)
	}
	for _, v := range []struct {
		v    rxVariant
		name string
	}{
		{rxMissedAfterCAS, "Ready sets rxMissed after its CAS"},
		{rxSwapFirst, "rxRelease swaps rxMissed before freeing the token"},
		{rxNoMissed, "no rxMissed"},
		{rxWaiterNotSpent, "a waiter that disarmed releases with spent=false"},
	} {
		x := rxCheck(v.v, 1, 2, 2, false)
		if x.stranded == 0 {
			t.Errorf("%s strands no octets: the check cannot fail", v.name)
		}
		t.Logf("%s: %d of %d schedules strand octets, e.g. %s", v.name, x.stranded, x.ends, x.example)
	}
}
