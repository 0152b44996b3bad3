package target

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/nvme"
	"github.com/goiwarp/iwarp/nvmeof"
)

// Defaults and bounds of Config.
const (
	// DefaultQueueDepth is the entries of an I/O queue the controller
	// allows (CAP.MQES+1): what Linux's host asks for by default.
	DefaultQueueDepth = 128
	// MaxQueueDepth bounds Config.QueueDepth.
	MaxQueueDepth = 1024
	// DefaultMaxIOQueues is the I/O queues a controller grants at most.
	DefaultMaxIOQueues = 8
	// MaxIOQueues bounds Config.MaxIOQueues.
	MaxIOQueues = 64
	// DefaultInlineDataSize is the in-capsule data an I/O command capsule
	// may carry: room for 8 KiB writes and the I/O queues' Connect data.
	DefaultInlineDataSize = 8192
	// MaxInlineDataSize bounds Config.InlineDataSize.
	MaxInlineDataSize = 64 << 10
	// DefaultMaxTransfer is the most data one command moves (MDTS).
	DefaultMaxTransfer = 128 << 10
	// MaxTransfer bounds Config.MaxTransfer.
	MaxTransfer = 1 << 20

	// adminQueueDepth is the admin queue's entries: the Fabrics minimum,
	// the most Linux's host and target use (NVMe-oF 1.1 §3.3, "the
	// minimum Admin Queue size is 32 entries").
	adminQueueDepth = 32
	// pageSize is the memory page size of CC.MPS 0, the unit of MDTS.
	pageSize = 4096
)

// Errors of the target. Errors that a host's command meets are NVMe
// statuses in its completion, not Go errors.
var (
	// ErrInvalidConfig: New was given a Config it cannot serve.
	ErrInvalidConfig = errors.New("nvmeof: invalid target configuration")
	// ErrClosed: the Target was closed.
	ErrClosed = errors.New("nvmeof: target closed")
)

// Config configures a Target. NQN and Backend are required; the other
// zero fields take the defaults.
type Config struct {
	// NQN is the NVM subsystem's NQN (NVMe Base 1.4 §7.9), what a host
	// names in its Connect; at most 223 bytes, not the discovery NQN.
	NQN string
	// Backend holds the namespace's blocks (NSID 1). Its size is cut
	// down to whole blocks; it must hold at least one.
	Backend Backend
	// BlockSize is the namespace's logical block size, 512 (default) or
	// 4096.
	BlockSize int
	// MaxIOQueues is the I/O queues a controller grants at most (Set
	// Features, Number of Queues), 1 to MaxIOQueues (default
	// DefaultMaxIOQueues). Each is its own iWARP connection.
	MaxIOQueues int
	// QueueDepth is the most entries of an I/O queue, 2 to MaxQueueDepth
	// (default DefaultQueueDepth): CAP.MQES+1 and MAXCMD.
	QueueDepth int
	// InlineDataSize is the in-capsule data an I/O command capsule may
	// carry (IOCCSZ), rounded up to 16 bytes; 0 means
	// DefaultInlineDataSize and a negative value none. At most
	// MaxInlineDataSize. Each receive posted on an I/O queue has room for
	// a 64-byte command and this much data.
	InlineDataSize int
	// MaxTransfer is the most data one command moves (MDTS), a power of
	// two from 4096 to MaxTransfer bytes (default DefaultMaxTransfer).
	MaxTransfer int
	// SerialNumber and ModelNumber are what Identify Controller reports
	// (at most 20 and 40 ASCII characters); the defaults are derived from
	// the NQN and "goiwarp nvmeof target".
	SerialNumber, ModelNumber string
	// Device is the iWARP device the queues' QPs are made on; nil opens
	// one, which Close closes.
	Device *iwarp.Device
	// DisableCRC does not ask for MPA CRCs when accepting (they are still used
	// if the host asks).
	DisableCRC bool
	// Logger receives connection and controller events (Info: controllers
	// made and gone; Warn: rejected connections, keep-alive expiry,
	// queues torn down on bad input; Debug: each queue). nil: none.
	Logger *slog.Logger
}

// settings are a Config with the defaults applied and checked; immutable
// once New returns.
type settings struct {
	nqn         string
	backend     Backend
	blockSize   int
	blocks      uint64 // the namespace's size in blocks
	maxIOQueues int
	queueDepth  int
	inline      int // in-capsule data of I/O capsules, a multiple of 16
	maxTransfer int
	mdts        uint8 // log2(maxTransfer/pageSize)
	serial      string
	model       string
	noCRC       bool
}

// resolve applies the defaults to cfg and checks it.
func resolve(cfg *Config) (settings, error) {
	if cfg == nil {
		return settings{}, fmt.Errorf("%w: nil Config", ErrInvalidConfig)
	}
	s := settings{nqn: cfg.NQN, backend: cfg.Backend, blockSize: cfg.BlockSize, maxIOQueues: cfg.MaxIOQueues,
		queueDepth: cfg.QueueDepth, inline: cfg.InlineDataSize, maxTransfer: cfg.MaxTransfer,
		serial: cfg.SerialNumber, model: cfg.ModelNumber, noCRC: cfg.DisableCRC}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&s.blockSize, 512)
	def(&s.maxIOQueues, DefaultMaxIOQueues)
	def(&s.queueDepth, DefaultQueueDepth)
	def(&s.inline, DefaultInlineDataSize)
	def(&s.maxTransfer, DefaultMaxTransfer)
	if s.inline < 0 {
		s.inline = 0
	}
	s.inline = (s.inline + 15) &^ 15
	if s.model == "" {
		s.model = "goiwarp nvmeof target"
	}
	if s.serial == "" {
		s.serial = defaultSerial(s.nqn)
	}
	switch {
	case !nvme.CheckNQN(s.nqn):
		return s, fmt.Errorf("%w: NQN must be 1 to %d bytes without NUL", ErrInvalidConfig, nvme.NQNMaxLen)
	case s.nqn == nvmeof.DiscoveryNQN:
		return s, fmt.Errorf("%w: NQN is the discovery NQN", ErrInvalidConfig)
	case s.backend == nil:
		return s, fmt.Errorf("%w: no Backend", ErrInvalidConfig)
	case s.blockSize != 512 && s.blockSize != 4096:
		return s, fmt.Errorf("%w: BlockSize %d is neither 512 nor 4096", ErrInvalidConfig, s.blockSize)
	case s.maxIOQueues < 1 || s.maxIOQueues > MaxIOQueues:
		return s, fmt.Errorf("%w: MaxIOQueues %d not in 1..%d", ErrInvalidConfig, s.maxIOQueues, MaxIOQueues)
	case s.queueDepth < 2 || s.queueDepth > MaxQueueDepth:
		return s, fmt.Errorf("%w: QueueDepth %d not in 2..%d", ErrInvalidConfig, s.queueDepth, MaxQueueDepth)
	case s.inline > MaxInlineDataSize:
		return s, fmt.Errorf("%w: InlineDataSize %d above %d", ErrInvalidConfig, s.inline, MaxInlineDataSize)
	case s.maxTransfer < pageSize || s.maxTransfer > MaxTransfer || s.maxTransfer&(s.maxTransfer-1) != 0:
		return s, fmt.Errorf("%w: MaxTransfer %d is not a power of two from %d to %d", ErrInvalidConfig, s.maxTransfer, pageSize, MaxTransfer)
	case len(s.serial) > 20 || !printableASCII(s.serial):
		return s, fmt.Errorf("%w: SerialNumber must be at most 20 printable ASCII characters", ErrInvalidConfig)
	case len(s.model) > 40 || !printableASCII(s.model):
		return s, fmt.Errorf("%w: ModelNumber must be at most 40 printable ASCII characters", ErrInvalidConfig)
	}
	size := s.backend.Size()
	s.blocks = uint64(max(size, 0)) / uint64(s.blockSize)
	if s.blocks == 0 {
		return s, fmt.Errorf("%w: the Backend holds %d bytes, less than one %d-byte block", ErrInvalidConfig, size, s.blockSize)
	}
	for pageSize<<s.mdts < s.maxTransfer {
		s.mdts++
	}
	return s, nil
}

// printableASCII reports whether s is printable ASCII (0x20 to 0x7E), as
// Identify's string fields are (NVMe Base 1.4 §7.10).
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7E {
			return false
		}
	}
	return true
}
