package iwarp

import (
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/internal/verbs"
)

// EventType says what an asynchronous event reports.
type EventType uint8

// Asynchronous events (verbs' ibv_get_async_event, rdma_cm's disconnect
// events).
const (
	// EventQPFatal: the QP's stream failed: a Terminate was sent or
	// received (Event.Err is a *TerminateError) or the connection broke.
	EventQPFatal EventType = iota + 1
	// EventPeerDisconnected: the peer closed the connection.
	EventPeerDisconnected
	// EventDisconnected: an orderly Disconnect of this side completed.
	EventDisconnected
	// EventQPClosed: the QP was closed locally.
	EventQPClosed
	// EventSRQLimit: fewer receives than the armed limit remain posted on
	// Event.SRQ (see SRQ.Arm).
	EventSRQLimit
)

var eventNames = [...]string{EventQPFatal: "QP fatal", EventPeerDisconnected: "peer disconnected",
	EventDisconnected: "disconnected", EventQPClosed: "QP closed", EventSRQLimit: "SRQ limit reached"}

// String names the event type.
func (t EventType) String() string {
	if int(t) < len(eventNames) && eventNames[t] != "" {
		return eventNames[t]
	}
	return "event?"
}

// Event is an asynchronous event: a QP has been torn down (every work
// request completed or flushed, and Err says why), or an SRQ reached its
// limit.
type Event struct {
	Type EventType
	QP   *QP
	SRQ  *SRQ // EventSRQLimit
	Err  error
}

const eventBuffer = 256

type events struct {
	ch      chan Event
	dropped atomic.Uint64
}

// Events returns the Device's asynchronous event channel. It buffers 256
// events; events that find it full are dropped and counted (DroppedEvents):
// the engine never blocks on a slow reader. QP.Done and QP.Err give the
// same information per QP.
func (d *Device) Events() <-chan Event { return d.ev.ch }

// DroppedEvents returns how many events found the channel full.
func (d *Device) DroppedEvents() uint64 { return d.ev.dropped.Load() }

// qpDone is the engine's teardown callback.
func (d *Device) qpDone(eqp *verbs.QP) {
	qp, _ := eqp.User.(*QP)
	if qp != nil {
		qp.releaseListener()
		qp.forget()
	}
	err := eqp.Err()
	ev := Event{QP: qp, Err: wrapEngineError(err)}
	switch {
	case errors.Is(err, rdmap.ErrLocallyClosed):
		ev.Type = EventQPClosed
	case errors.Is(err, rdmap.ErrDisconnected):
		ev.Type = EventDisconnected
	case errors.Is(err, rdmap.ErrPeerDisconnected):
		ev.Type = EventPeerDisconnected
	default:
		ev.Type = EventQPFatal
	}
	d.logEvent(&ev)
	d.event(ev)
}

// logEvent records a QP's teardown in the Device's log.
func (d *Device) logEvent(ev *Event) {
	attrs := []slog.Attr{slog.String("event", ev.Type.String())}
	if ev.QP != nil {
		a := ev.QP.Attributes()
		attrs = append(attrs, slog.String("peer", a.PeerAddr))
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.String("err", ev.Err.Error()))
	}
	level := slog.LevelInfo
	if ev.Type == EventQPFatal {
		level = slog.LevelWarn
	}
	d.log.log(level, "iwarp: queue pair torn down", attrs...)
}

// event delivers ev without ever blocking the engine.
func (d *Device) event(ev Event) {
	select {
	case d.ev.ch <- ev:
	default:
		d.ev.dropped.Add(1)
	}
}
