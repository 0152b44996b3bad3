package verbs

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/goiwarp/iwarp/internal/poll"
)

// ErrDeviceClosed: the QP's Device was closed while it was connected.
var ErrDeviceClosed = errors.New("the device was closed")

// Device is what the QPs of one RNIC share: the poller that tells them
// when their sockets have octets to read, with one goroutine for all of
// them.
type Device struct {
	// poller is made by the first QP that starts on a connection with a
	// descriptor (pollerFor), so that a Device whose QPs run over
	// in-memory connections has no goroutine; it never changes after.
	// Its goroutine calls the QPs' Ready. noPoll: every QP reads with a
	// receive goroutine of its own.
	pollOnce sync.Once
	poller   *poll.Poller
	noPoll   bool
	// workers run the QPs' receive and transmit goroutines' jobs.
	workers *workers

	// mu guards polled: the QPs whose socket is in the poller's set (from
	// Start until Close), which Close fails, since no Ready comes after.
	// Taken after a QP's mu, never before.
	mu     sync.Mutex
	polled map[*QP]struct{}
	closed bool

	// qpns numbers the QPs (New takes the next, from 1).
	qpns atomic.Uint32
}

// DeviceConfig configures NewDevice.
type DeviceConfig struct {
	// NoPoll makes every QP read with a receive goroutine of its own, as
	// on systems without epoll (the portable path, for its tests).
	NoPoll bool
}

// NewDevice returns a Device. Where readiness polling is unsupported (not
// Linux, or the iwarp_portable build tag) its QPs read with a goroutine
// each.
func NewDevice(cfg DeviceConfig) (*Device, error) {
	return &Device{workers: newWorkers(), noPoll: cfg.NoPoll}, nil
}

// pollerFor returns the Device's poller, making it at the first call: nil
// when the Device reads without one (NoPoll, or no epoll here, or epoll
// could not be set up: its QPs then read with a goroutine each), and
// ErrDeviceClosed once the Device is closed.
func (d *Device) pollerFor() (*poll.Poller, error) {
	d.pollOnce.Do(func() {
		if d.noPoll {
			return
		}
		p, err := poll.New()
		if err != nil {
			return
		}
		d.mu.Lock()
		closed := d.closed
		if !closed {
			d.poller = p
		}
		d.mu.Unlock()
		if closed {
			_ = p.Close()
		}
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrDeviceClosed
	}
	return d.poller, nil
}

// Polling reports whether the Device's QPs are read by its poller (else
// each has a receive goroutine): whether it was made, or would be.
func (d *Device) Polling() bool {
	if d.noPoll {
		return false
	}
	p, _ := d.pollerFor()
	return p != nil
}

// Close stops the Device's poller and its idle workers. A QP still
// connected through the poller fails (ErrDeviceClosed): nothing would
// read its socket any more.
func (d *Device) Close() error {
	d.workers.close()
	d.mu.Lock()
	d.closed = true
	p := d.poller
	d.mu.Unlock()
	if p == nil {
		return nil
	}
	err := p.Close()
	d.mu.Lock()
	qps := make([]*QP, 0, len(d.polled))
	for q := range d.polled {
		qps = append(qps, q)
	}
	d.polled = nil
	d.mu.Unlock()
	for _, q := range qps {
		q.failWith(ErrDeviceClosed)
	}
	return err
}

// track records that q's socket is in the poller's set; it reports false
// once the Device is closed.
func (d *Device) track(q *QP) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	if d.polled == nil {
		d.polled = make(map[*QP]struct{})
	}
	d.polled[q] = struct{}{}
	return true
}

// untrack forgets q (its Close).
func (d *Device) untrack(q *QP) {
	d.mu.Lock()
	delete(d.polled, q)
	d.mu.Unlock()
}
