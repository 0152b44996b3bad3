package iwarp

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/verbs"
)

// Device is a software RNIC: the STag table shared by its protection
// domains, and the atomicity domain of RFC 7306 (no two atomic operations on
// the same registered memory of one Device interleave, whichever of its QPs
// they arrive on). A program normally opens one Device.
type Device struct {
	cfg    DeviceConfig
	table  *mem.Table
	nextPD atomic.Uint32
	// vd is the engine's device: the poller that reads every QP's
	// connection. It is closed once the Device is closed and the last of
	// its QPs is torn down.
	vd *verbs.Device

	ev    events
	stats deviceStats
	log   *rateLog

	mu     sync.Mutex
	closed bool
	live   int  // QPs created and not yet closed (they use vd)
	vdDone bool // vd closed
}

// DeviceConfig configures NewDevice. The zero value gives the defaults.
type DeviceConfig struct {
	// MaxMemoryRegions bounds the registered regions (default 1<<20).
	MaxMemoryRegions int
	// Logger, if set, receives connection setup and teardown records:
	// Debug for connections made, Info for orderly disconnects, Warn for
	// Terminates and failed connections (at most 10 warnings a second;
	// the number suppressed is reported). Nothing is logged on the data
	// path.
	Logger *slog.Logger
}

// DeviceAttributes are a Device's limits.
type DeviceAttributes struct {
	MaxMemoryRegions int
	MaxQueueDepth    int // work requests per send or receive queue
	MaxSGE           int // scatter/gather elements per work request
	MaxInline        int // inline bytes per send work request
	MaxIRD, MaxORD   int // outstanding inbound / outbound RDMA Reads per QP
	MaxMessageSize   int64
	MaxPrivateData   int // MPA private data per connection message (RFC 5044)
}

// Limits of every Device.
const (
	maxQueueDepth = 1 << 14
	maxSGE        = 16
	maxInline     = 4096
	maxIRDORD     = 128
)

// NewDevice opens a software RNIC.
func NewDevice(cfg *DeviceConfig) *Device {
	d := &Device{ev: events{ch: make(chan Event, eventBuffer)}}
	if cfg != nil {
		d.cfg = *cfg
	}
	if d.cfg.MaxMemoryRegions <= 0 {
		d.cfg.MaxMemoryRegions = 1 << 20
	}
	d.table = mem.NewTable(mem.TableOptions{MaxRegions: d.cfg.MaxMemoryRegions})
	d.log = newRateLog(d.cfg.Logger)
	vd, err := verbs.NewDevice(verbs.DeviceConfig{})
	if err != nil { // no poller could be made: every QP reads with a goroutine
		vd, _ = verbs.NewDevice(verbs.DeviceConfig{NoPoll: true})
	}
	d.vd = vd
	d.stats.live = make(map[*verbs.QP]struct{})
	return d
}

// Attributes returns the Device's limits.
func (d *Device) Attributes() DeviceAttributes {
	return DeviceAttributes{
		MaxMemoryRegions: d.cfg.MaxMemoryRegions,
		MaxQueueDepth:    maxQueueDepth,
		MaxSGE:           maxSGE,
		MaxInline:        maxInline,
		MaxIRD:           maxIRDORD,
		MaxORD:           maxIRDORD,
		MaxMessageSize:   1 << 31,
		MaxPrivateData:   512,
	}
}

// AllocPD allocates a protection domain (RFC 5040 §2.1): memory registered
// in one PD is reachable only through QPs of the same PD.
func (d *Device) AllocPD() (*PD, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	return &PD{dev: d, id: d.nextPD.Add(1)}, nil
}

// Close marks the Device closed: no new PDs. Resources already created stay
// usable until closed themselves; the Device's poller stops once the last
// of its QPs is closed.
func (d *Device) Close() error {
	d.mu.Lock()
	d.closed = true
	stop := d.live == 0 && !d.vdDone
	d.vdDone = d.vdDone || stop
	d.mu.Unlock()
	if stop {
		return d.vd.Close()
	}
	return nil
}

// qpOpened counts a new QP of the Device.
func (d *Device) qpOpened() {
	d.mu.Lock()
	d.live++
	d.mu.Unlock()
}

// qpClosed counts a QP closed for good, and stops the Device's poller if
// it was the last of a closed Device.
func (d *Device) qpClosed() {
	d.mu.Lock()
	d.live--
	stop := d.closed && d.live == 0 && !d.vdDone
	d.vdDone = d.vdDone || stop
	d.mu.Unlock()
	if stop {
		_ = d.vd.Close()
	}
}

// PD is a protection domain.
type PD struct {
	dev *Device
	id  uint32
}

// Device returns the PD's device.
func (pd *PD) Device() *Device { return pd.dev }
