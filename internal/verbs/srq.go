package verbs

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
)

// errSRQShape: NewSRQ was given a depth or SGE count below 1.
var errSRQShape = errors.New("a shared receive queue needs a depth and an SGE count of at least 1")

// SRQ is a shared receive queue: QPs created with Config.SRQ take their
// receives from it (it is their rdmap.RecvSource). It has its own lock,
// taken inside a QP's (the Core takes receives under its QP's lock).
type SRQ struct {
	// User is the owner's handle, passed to the limit callback.
	User any

	// mu guards everything below it.
	mu   sync.Mutex
	ring *rdmap.RecvRing
	// The limit event (verbs' srq_limit): armed with limit and fn, fired
	// once when fewer than limit receives remain posted after a take.
	limit   int
	onLimit func(*SRQ)
	// reserved are the CQs this SRQ reserved its depth in.
	reserved []*CQ

	// fire: the limit was crossed under a QP's lock; the QP calls the
	// callback once it has let go of its lock (fireLimit).
	fire atomic.Bool
}

// NewSRQ returns a shared receive queue of depth receives of up to maxSGE
// elements each, whose buffers are regions of table t in protection domain
// pd.
func NewSRQ(depth, maxSGE int, t *mem.Table, pd uint32) (*SRQ, error) {
	if depth < 1 || maxSGE < 1 {
		return nil, errSRQShape
	}
	return &SRQ{ring: rdmap.NewRecvRing(depth, maxSGE, t, pd)}, nil
}

// PostRecv posts receives to the SRQ, in order (errors of
// rdmap.RecvRing.Post).
func (s *SRQ) PostRecv(wrs []rdmap.RecvWR) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ring.Post(wrs)
}

// Take is rdmap.RecvSource's: the oldest posted receive, for a QP's Core
// (called under that QP's lock).
func (s *SRQ) Take() (rdmap.PostedRecv, []mem.Gen, uint64, bool) {
	s.mu.Lock()
	wr, gens, slot, ok := s.ring.Take()
	if ok && s.onLimit != nil && s.limit > 0 && s.ring.Posted() < s.limit {
		s.limit = 0
		s.fire.Store(true)
	}
	s.mu.Unlock()
	return wr, gens, slot, ok
}

// release frees the slot of a receive whose completion was consumed.
func (s *SRQ) release(slot uint64) {
	s.mu.Lock()
	s.ring.Release(slot)
	s.mu.Unlock()
}

// Arm sets the limit event: fn is called once, without any lock held and
// on the goroutine of the QP whose message took the receive, when fewer
// than limit receives remain posted. It must not block.
func (s *SRQ) Arm(limit int, fn func(*SRQ)) {
	s.mu.Lock()
	s.limit, s.onLimit = limit, fn
	s.mu.Unlock()
}

// fireLimit calls the limit callback if a take crossed the limit.
func (s *SRQ) fireLimit() {
	if !s.fire.Load() || !s.fire.CompareAndSwap(true, false) {
		return
	}
	s.mu.Lock()
	fn := s.onLimit
	s.mu.Unlock()
	if fn != nil {
		fn(s)
	}
}

// Depth returns the SRQ's capacity.
func (s *SRQ) Depth() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ring.Depth()
}

// Posted returns the number of receives posted and not yet used.
func (s *SRQ) Posted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ring.Posted()
}

// reserveIn reserves the SRQ's depth in cq, once per CQ.
func (s *SRQ) reserveIn(cq *CQ) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.reserved {
		if c == cq {
			return nil
		}
	}
	if err := cq.reserve(s.ring.Depth()); err != nil {
		return err
	}
	s.reserved = append(s.reserved, cq)
	cq.join(nil)
	return nil
}
