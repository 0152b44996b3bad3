package target

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/goiwarp/iwarp"
)

// Target is an NVMe over Fabrics target: an NVM subsystem with one
// namespace and a discovery controller, served over iWARP.
//
// Ownership: each queue (one iWARP connection) is served by one goroutine,
// which owns the queue's state. A controller's state shared by its queues
// (properties, features, keep-alive, the I/O queue table) is guarded by
// the controller's mutex. The Target's mutex guards the controller
// registry and the set of queues being served.
type Target struct {
	s      settings        // immutable after New
	ids    nsIdentity      // immutable after New
	dev    *iwarp.Device   // the queues' Device
	ownDev bool            // dev was opened by New: Close closes it
	pd     *iwarp.PD       // every queue's protection domain
	log    *slog.Logger    // never nil
	ctx    context.Context // ends when Close starts
	cancel context.CancelFunc
	wg     sync.WaitGroup // the goroutines of Serve and of every queue
	stats  ioStats
	// afterFunc starts the keep-alive timers (afterFunc; tests set a fake
	// before Serve).
	afterFunc func(d time.Duration, f func()) (stop func() bool)

	mu     sync.Mutex // guards the fields below
	closed bool
	ctrls  map[uint16]*controller // live controllers by CNTLID
	nextID uint16                 // the next CNTLID to try
	queues map[*queue]struct{}    // queues being served
	serves int                    // Serve calls running
}

// New returns a Target serving cfg's namespace; Serve makes it accept
// connections.
func New(cfg *Config) (*Target, error) {
	s, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	t := &Target{s: s, ids: newNSIdentity(s.nqn), dev: cfg.Device, log: cfg.Logger,
		ctrls: map[uint16]*controller{}, nextID: 1, queues: map[*queue]struct{}{}, afterFunc: afterFunc}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.dev == nil {
		t.dev = iwarp.NewDevice(nil)
		t.ownDev = true
	}
	if t.pd, err = t.dev.AllocPD(); err != nil {
		if t.ownDev {
			t.dev.Close()
		}
		return nil, fmt.Errorf("nvmeof: %w", err)
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t, nil
}

// NQN returns the subsystem's NQN.
func (t *Target) NQN() string { return t.s.nqn }

// Serve accepts connections from ln and serves each on its own goroutine
// until ctx ends (it returns ctx's error), Close is called (ErrClosed) or
// ln fails (its error). The queues already connected keep being served
// until Close. Serve does not close ln. Several Serve calls may run at
// once, on different listeners.
func (t *Target) Serve(ctx context.Context, ln *iwarp.Listener) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return ErrClosed
	}
	t.serves++
	t.wg.Add(1)
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.serves--
		t.mu.Unlock()
		t.wg.Done()
	}()
	actx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { // Close ends the Accept too
		select {
		case <-t.ctx.Done():
			stop()
		case <-actx.Done():
		}
	}()
	for {
		req, err := ln.Accept(actx)
		if err != nil {
			switch {
			case t.ctx.Err() != nil:
				return ErrClosed
			case ctx.Err() != nil:
				return ctx.Err()
			}
			return fmt.Errorf("nvmeof: accept: %w", err)
		}
		if !t.startConn(req) {
			req.Reject(cmReject(cmNoResources))
			return ErrClosed
		}
	}
}

// startConn serves req on a new goroutine; false if the Target is closed.
func (t *Target) startConn(req *iwarp.ConnRequest) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.serveConn(req)
	}()
	return true
}

// Close stops every Serve, tears down every queue (their connections are
// closed at once, without waiting for the hosts) and waits for the
// target's goroutines. The Backend is not closed. Close returns ErrClosed
// when called again.
func (t *Target) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return ErrClosed
	}
	t.closed = true
	qs := make([]*queue, 0, len(t.queues))
	for q := range t.queues {
		qs = append(qs, q)
	}
	ctrls := make([]*controller, 0, len(t.ctrls))
	for _, c := range t.ctrls {
		ctrls = append(ctrls, c)
	}
	t.mu.Unlock()
	t.cancel()
	for _, c := range ctrls {
		c.stopKeepAlive()
	}
	for _, q := range qs {
		q.qp.Close()
	}
	t.wg.Wait()
	var err error
	if t.ownDev {
		err = t.dev.Close()
	}
	if errors.Is(err, iwarp.ErrClosed) {
		err = nil
	}
	return err
}

// addQueue records q as served; false if the Target is closed.
func (t *Target) addQueue(q *queue) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.queues[q] = struct{}{}
	return true
}

// removeQueue forgets q.
func (t *Target) removeQueue(q *queue) {
	t.mu.Lock()
	delete(t.queues, q)
	t.mu.Unlock()
}
