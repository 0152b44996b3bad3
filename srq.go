package iwarp

import (
	"errors"
	"fmt"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/verbs"
)

// SRQ is a shared receive queue: the receives of every QP created with
// QPConfig.SRQ set come from it, so an application can keep one pool of
// receive buffers for many connections. A Send (or Immediate Data) takes the
// oldest posted receive, whichever QP it arrives on; the completion goes to
// that QP's receive CQ.
type SRQ struct {
	pd *PD
	e  *verbs.SRQ
}

// SRQConfig is the shape of a shared receive queue.
type SRQConfig struct {
	// Depth is the number of receives it holds (default 256).
	Depth int
	// MaxSGE is the scatter/gather elements per receive (default 4).
	MaxSGE int
}

// NewSRQ creates a shared receive queue. Each receive CQ of a QP that uses
// it reserves Depth entries (once per CQ), so a CQ still cannot overrun.
func (pd *PD) NewSRQ(cfg *SRQConfig) (*SRQ, error) {
	c := SRQConfig{Depth: 256, MaxSGE: 4}
	if cfg != nil {
		if cfg.Depth != 0 {
			c.Depth = cfg.Depth
		}
		if cfg.MaxSGE != 0 {
			c.MaxSGE = cfg.MaxSGE
		}
	}
	if c.Depth < 1 || c.Depth > maxQueueDepth || c.MaxSGE < 1 || c.MaxSGE > maxSGE {
		return nil, fmt.Errorf("%w: SRQ depth %d, MaxSGE %d", ErrInvalidConfig, c.Depth, c.MaxSGE)
	}
	e, err := verbs.NewSRQ(c.Depth, c.MaxSGE, pd.dev.table, pd.id)
	if err != nil {
		return nil, wrapAs(ErrInvalidConfig, err)
	}
	s := &SRQ{pd: pd, e: e}
	e.User = s
	return s, nil
}

// PostRecv posts receives to the SRQ, in order; on error the receives
// before the failing one were posted.
func (s *SRQ) PostRecv(wrs ...RecvWR) error {
	if _, err := s.e.PostRecv(wrs); err != nil {
		if errors.Is(err, rdmap.ErrRQFull) {
			return wrapAs(ErrQueueFull, err)
		}
		return wrapAs(ErrInvalidWR, err)
	}
	return nil
}

// Arm sets the SRQ limit: once fewer than limit receives remain posted, an
// EventSRQLimit event is sent on the Device's event channel (once per Arm),
// so the application can replenish the pool before a Send finds it empty
// (which would be fatal to that connection).
func (s *SRQ) Arm(limit int) {
	dev := s.pd.dev
	s.e.Arm(limit, func(*verbs.SRQ) {
		dev.stats.srqLimits.Add(1)
		dev.event(Event{Type: EventSRQLimit, SRQ: s})
	})
}

// Posted returns the number of receives posted and not yet used.
func (s *SRQ) Posted() int { return s.e.Posted() }
