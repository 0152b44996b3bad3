package verbs

import (
	"errors"

	"github.com/goiwarp/iwarp/internal/poll"
)

// Device is what the QPs of one RNIC share: the poller that tells them
// when their sockets have octets to read, with one goroutine for all of
// them.
type Device struct {
	// poller is set by NewDevice and never changes (nil: every QP reads
	// with a receive goroutine of its own). Its goroutine calls the
	// QPs' Ready.
	poller *poll.Poller
	// workers run the QPs' receive and transmit goroutines' jobs.
	workers *workers
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
	d := &Device{workers: newWorkers()}
	if cfg.NoPoll {
		return d, nil
	}
	p, err := poll.New()
	switch {
	case err == nil:
		d.poller = p
	case !errors.Is(err, poll.ErrUnsupported):
		return nil, err
	}
	return d, nil
}

// Polling reports whether the Device's QPs are read by its poller (else
// each has a receive goroutine).
func (d *Device) Polling() bool { return d.poller != nil }

// Close stops the Device's poller and its idle workers. Close the QPs
// first: a QP still connected fails when it next re-arms its socket.
func (d *Device) Close() error {
	d.workers.close()
	if d.poller == nil {
		return nil
	}
	return d.poller.Close()
}
