package iwarp

import (
	"context"
	"errors"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/verbs"
)

// CQ is a completion queue. Its capacity is fixed at creation and every
// queue attached to it reserves its depth, so a CQ never overruns: creating
// a QP whose queues do not fit fails instead (docs/semantics.md).
type CQ struct {
	dev *Device
	e   *verbs.CQ
}

// EventChannel gathers notifications from any number of CQs, so that one
// goroutine can wait on all of them (verbs' completion channel).
type EventChannel struct {
	e *verbs.EventChannel
}

// NewEventChannel returns an event channel for up to n CQs.
func NewEventChannel(n int) *EventChannel {
	return &EventChannel{e: verbs.NewEventChannel(n)}
}

// Wait blocks until one of the CQs bound to the channel fires (see CQ.Arm)
// or ctx ends, and returns that CQ.
func (ch *EventChannel) Wait(ctx context.Context) (*CQ, error) {
	select {
	case vcq := <-ch.e.C:
		cq, _ := vcq.Context.(*CQ)
		return cq, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// NewCQ creates a completion queue for capacity completions; ch, if not nil,
// receives its notifications once armed.
func (d *Device) NewCQ(capacity int, ch *EventChannel) (*CQ, error) {
	if capacity < 1 || capacity > 1<<20 {
		return nil, errors.New("iwarp: CQ capacity must be 1 to 1<<20")
	}
	var ech *verbs.EventChannel
	if ch != nil {
		ech = ch.e
	}
	cq := &CQ{dev: d, e: verbs.NewCQ(capacity, ech)}
	cq.e.Context = cq
	return cq, nil
}

// Poll moves up to len(out) completions, oldest first, into out and returns
// how many. It never blocks and does not allocate. A completion's work
// request slot is free again once it has been polled.
func (cq *CQ) Poll(out []Completion) int {
	n := cq.e.PollCompletions(out)
	for i := range out[:n] {
		if out[i].Err != nil {
			out[i].Err = wrapEngineError(out[i].Err)
		}
	}
	return n
}

// engineCompletion returns the API's view of an engine completion: its
// error converted.
func engineCompletion(c *rdmap.Completion) Completion {
	cc := c.Completion
	if cc.Err != nil {
		cc.Err = wrapEngineError(cc.Err)
	}
	return cc
}

// Wait blocks until the CQ holds a completion or ctx ends.
func (cq *CQ) Wait(ctx context.Context) error {
	err := cq.e.Wait(ctx)
	if errors.Is(err, verbs.ErrCQClosed) {
		return ErrClosed
	}
	return err
}

// Next waits for the next completion and returns it.
func (cq *CQ) Next(ctx context.Context) (Completion, error) {
	var out [1]Completion
	for {
		if cq.Poll(out[:]) == 1 {
			return out[0], nil
		}
		if err := cq.Wait(ctx); err != nil {
			return Completion{}, err
		}
	}
}

// Notify says which completion an armed CQ notifies its event channel of.
type Notify uint8

// The notifications of CQ.Arm (libibverbs' solicited_only argument of
// ibv_req_notify_cq).
const (
	// NotifyNext: the next completion.
	NotifyNext Notify = iota
	// NotifySolicited: the next completion of a message that asked for a
	// solicited event (RFC 5040 §5.3), or the next failed one.
	NotifySolicited
)

// Arm asks for one notification on the CQ's event channel when the
// completion n names arrives. Completions already queued do not count:
// poll after arming to close the race, as with verbs.
func (cq *CQ) Arm(n Notify) { cq.e.Arm(n == NotifySolicited) }

// Len returns the number of completions waiting.
func (cq *CQ) Len() int { return cq.e.Len() }

// Cap returns the CQ's capacity.
func (cq *CQ) Cap() int { return cq.e.Cap() }

// Close wakes the CQ's waiters; queued completions can still be polled.
func (cq *CQ) Close() error {
	cq.e.Close()
	return nil
}
