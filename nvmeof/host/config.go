package host

import (
	"crypto/rand"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/goiwarp/iwarp"
)

// Defaults of Config.
const (
	// DefaultQueueSize is the entries of each I/O submission queue, as
	// Linux's nvme connect (--queue-size).
	DefaultQueueSize = 128
	// DefaultKATO is the keep-alive timeout of an NVM subsystem's
	// controller, Linux's NVME_DEFAULT_KATO.
	DefaultKATO = 5 * time.Second
	// DefaultMaxTransfer is the most data one command moves by default.
	DefaultMaxTransfer = 128 << 10
	// MaxQueueSize bounds Config.QueueSize.
	MaxQueueSize = 1024
	// adminQueueSize is the admin queue's entries: the Fabrics minimum,
	// the most Linux's target accepts (NVME_AQ_DEPTH), and what Linux's
	// host asks for.
	adminQueueSize = 32
	// maxIOQueues bounds Config.IOQueues.
	maxIOQueues = 64
	// minTransfer is the least Config.MaxTransfer.
	minTransfer = 4096
)

// Config configures a Controller. The zero value gives the defaults.
type Config struct {
	// HostNQN is the host's NQN sent in every Connect (NVMe over Fabrics
	// §3.3). Default: "nqn.2014-08.org.nvmexpress:uuid:" followed by
	// HostID as a UUID, the form Linux's nvme-cli generates.
	HostNQN string
	// HostID identifies the host (NVMe over Fabrics §3.3, Connect data).
	// Default: a random UUID made once per process, so every Controller
	// of a process is the same host, as every controller of a Linux
	// system is.
	HostID [16]byte
	// IOQueues is the number of I/O queues asked for (Set Features,
	// Number of Queues); the controller may grant fewer. Each is its own
	// iWARP connection. Default min(runtime.NumCPU(), 4); at most 64.
	// Ignored for a discovery controller, which has none.
	IOQueues int
	// QueueSize is the entries of each I/O submission queue, 2 to
	// MaxQueueSize (default DefaultQueueSize), lowered to what the
	// controller allows (CAP.MQES, MAXCMD). As Linux's host does, the
	// queue's SQSIZE is QueueSize-1 and at most QueueSize-1 commands are
	// outstanding on it at once, so the submission queue never overflows
	// (NVMe over Fabrics §3.3.2, "SQ flow control").
	QueueSize int
	// KATO is the keep-alive timeout sent in the admin Connect; a Keep
	// Alive command goes out every KATO/2 and a failed one fails the
	// Controller. Default DefaultKATO for an NVM subsystem and none
	// (KATO 0) for the discovery controller; negative: none.
	KATO time.Duration
	// MaxTransfer is the most data one command moves, a multiple of 4096
	// bytes from 4096 (default DefaultMaxTransfer), lowered to the
	// controller's MDTS. Larger reads and writes are split. Each command
	// slot keeps a registered buffer that grows to the largest transfer
	// it has carried.
	MaxTransfer int
	// Device is the iWARP device to use; nil opens one, which Close closes.
	Device *iwarp.Device
	// DisableCRC does not ask for MPA CRCs (they are still used if the target
	// asks).
	DisableCRC bool

	ticker ticker // paces the keep-alive (tests); nil: a time.Ticker
}

// defaultHostID is the process's host identity (Config.HostID's default).
var defaultHostID = sync.OnceValue(func() [16]byte {
	var id [16]byte
	rand.Read(id[:])          // never fails (crypto/rand)
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
})

// uuidString formats id as a UUID (8-4-4-4-12 hexadecimal digits).
func uuidString(id [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
}

// settings are a Config with the defaults applied and checked.
type settings struct {
	hostNQN     string
	hostID      [16]byte
	ioQueues    int
	queueSize   int
	kato        time.Duration // 0: none
	maxTransfer int
	dev         *iwarp.Device // nil: open one
	noCRC       bool
	ticker      ticker // paces the keep-alive; nil: a time.Ticker (tests set it)
}

// resolve applies the defaults to cfg for a controller of subsystem
// subnqn (discovery says whether it is the discovery controller).
func resolve(cfg *Config, discovery bool) (settings, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	s := settings{hostNQN: c.HostNQN, hostID: c.HostID, ioQueues: c.IOQueues, queueSize: c.QueueSize,
		kato: c.KATO, maxTransfer: c.MaxTransfer, dev: c.Device, noCRC: c.DisableCRC, ticker: c.ticker}
	if s.hostID == ([16]byte{}) {
		s.hostID = defaultHostID()
	}
	if s.hostNQN == "" {
		s.hostNQN = "nqn.2014-08.org.nvmexpress:uuid:" + uuidString(s.hostID)
	}
	if s.ioQueues == 0 {
		s.ioQueues = min(runtime.NumCPU(), 4)
	}
	if s.queueSize == 0 {
		s.queueSize = DefaultQueueSize
	}
	if s.maxTransfer == 0 {
		s.maxTransfer = DefaultMaxTransfer
	}
	switch {
	case s.kato == 0 && !discovery:
		s.kato = DefaultKATO
	case s.kato < 0:
		s.kato = 0
	}
	switch {
	case len(s.hostNQN) > nqnMax:
		return s, fmt.Errorf("%w: HostNQN longer than %d bytes", ErrInvalidConfig, nqnMax)
	case s.ioQueues < 1 || s.ioQueues > maxIOQueues:
		return s, fmt.Errorf("%w: IOQueues %d not in 1..%d", ErrInvalidConfig, s.ioQueues, maxIOQueues)
	case s.queueSize < 2 || s.queueSize > MaxQueueSize:
		return s, fmt.Errorf("%w: QueueSize %d not in 2..%d", ErrInvalidConfig, s.queueSize, MaxQueueSize)
	case s.maxTransfer < minTransfer || s.maxTransfer%minTransfer != 0 || s.maxTransfer > 1<<24:
		return s, fmt.Errorf("%w: MaxTransfer %d not a multiple of 4096 from 4096 to 16 MiB", ErrInvalidConfig, s.maxTransfer)
	case s.kato > 0 && s.kato < time.Millisecond:
		return s, fmt.Errorf("%w: KATO %v below a millisecond", ErrInvalidConfig, s.kato)
	case s.kato > time.Duration(^uint32(0))*time.Millisecond:
		return s, fmt.Errorf("%w: KATO %v does not fit the Connect command", ErrInvalidConfig, s.kato)
	}
	return s, nil
}
