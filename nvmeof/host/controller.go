package host

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/nvme"
	"github.com/goiwarp/iwarp/nvmeof"
)

// Controller is a host's association with one NVMe over Fabrics controller
// of a target: its admin queue and I/O queues, each an iWARP connection.
// Its methods are safe for concurrent use.
type Controller struct {
	s      settings // immutable
	addr   string   // immutable: the target's address
	subnqn string   // immutable
	dev    *iwarp.Device
	ownDev bool // dev was opened by Connect: Close closes it
	pd     *iwarp.PD

	admin *queue   // immutable after Connect
	io    []*queue // immutable after Connect
	next  atomic.Uint32
	// Immutable after Connect: what the controller reported.
	regs    registers
	info    ControllerInfo
	maxXfer int // the most data of one command: MaxTransfer and MDTS

	// ctx ends when the controller stops (Close or a failure): the
	// keep-alive goroutine's commands run under it.
	ctx    context.Context
	cancel context.CancelFunc
	// kaDone is closed when the keep-alive goroutine returns; nil without
	// one. Written by Connect's setup only.
	kaDone chan struct{}

	mu      sync.Mutex    // guards err, queues and closing
	err     error         // why the controller stopped: ErrFailed wrapping the cause, or ErrClosed
	queues  []*queue      // every queue made, for fail to tear down
	closing bool          // Close has begun
	dead    chan struct{} // closed when err is set
	closers sync.WaitGroup
}

// registers are the controller properties read at connect time.
type registers struct {
	cap nvme.CAP
	vs  nvme.Version
	cc  nvme.CC // as written to enable the controller
}

// Connect associates with controller subnqn of the target at addr
// (host:port, NVMe over RDMA's port 4420 by default; DefaultPort in package
// nvmeof), as NVMe over Fabrics §3 and its RDMA binding say and Linux's
// host does: it connects the admin queue (Connect with CNTLID 0xFFFF),
// reads CAP, enables the controller (CC.EN) and waits for CSTS.RDY
// (bounded by CAP.TO and ctx), identifies the controller, and for an NVM
// subsystem asks for cfg.IOQueues I/O queues (Set Features, Number of
// Queues) and connects those granted with the CNTLID the admin Connect
// returned; then it starts the keep-alive. With subnqn nvmeof.DiscoveryNQN
// it connects to the discovery controller, which has only its admin queue
// (see Controller.DiscoveryLog). ctx bounds the whole setup; on error
// everything made is torn down.
func Connect(ctx context.Context, addr, subnqn string, cfg *Config) (*Controller, error) {
	discovery := subnqn == nvmeof.DiscoveryNQN
	s, err := resolve(cfg, discovery)
	if err != nil {
		return nil, err
	}
	if subnqn == "" || len(subnqn) > nqnMax {
		return nil, fmt.Errorf("%w: subsystem NQN of %d bytes (1 to %d)", ErrInvalidConfig, len(subnqn), nqnMax)
	}
	c := &Controller{s: s, addr: addr, subnqn: subnqn, dev: s.dev, maxXfer: s.maxTransfer,
		dead: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if c.dev == nil {
		c.dev, c.ownDev = iwarp.NewDevice(nil), true
	}
	if err := c.setup(ctx, discovery); err != nil {
		c.teardown()
		return nil, err
	}
	return c, nil
}

// setup runs Connect's steps.
func (c *Controller) setup(ctx context.Context, discovery bool) error {
	var err error
	if c.pd, err = c.dev.AllocPD(); err != nil {
		return err
	}
	c.info.Discovery = discovery
	if c.admin, err = c.addQueue(ctx, 0, adminQueueSize, 0, 0); err != nil {
		return err
	}
	r, err := c.connectQueue(ctx, c.admin, nvme.CNTLIDDynamic)
	if err != nil {
		return err
	}
	c.info.ControllerID = nvme.ParseConnectResponse(r.DW0).CNTLID
	if err := c.enable(ctx); err != nil {
		return err
	}
	if err := c.identify(ctx); err != nil {
		return err
	}
	c.startKeepAlive()
	if discovery {
		return nil
	}
	return c.connectIO(ctx)
}

// addQueue creates and connects queue qid and records it for teardown.
func (c *Controller) addQueue(ctx context.Context, qid uint16, entries, inline int, cntlid uint16) (*queue, error) {
	q, err := newQueue(ctx, c, qid, entries, inline, cntlid)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.queues = append(c.queues, q)
	err = c.err
	c.mu.Unlock()
	if err != nil { // failed meanwhile: fail tore down the others
		q.stop(err)
		q.qp.Close()
		return nil, err
	}
	return q, nil
}

// connectIO asks for the I/O queues and connects those granted.
func (c *Controller) connectIO(ctx context.Context) error {
	want := c.s.ioQueues
	granted, err := c.setQueueCount(ctx, want)
	if err != nil {
		return err
	}
	n := min(want, granted)
	size := c.s.queueSize
	if mqes := int(c.regs.cap.MQES) + 1; size > mqes {
		size = mqes
	}
	if m := c.info.MaxCommands; m > 0 && size > m {
		size = m
	}
	if size < 2 {
		return fmt.Errorf("%w: the controller allows I/O queues of %d entries", ErrNotSupported, size)
	}
	c.info.IOQueues, c.info.QueueSize = n, size
	inline := 0
	if c.info.InCapsuleData > 0 && c.info.icdoff == 0 {
		inline = c.info.InCapsuleData
	}
	for i := 1; i <= n; i++ {
		q, err := c.addQueue(ctx, uint16(i), size, inline, c.info.ControllerID)
		if err != nil {
			return err
		}
		if _, err := c.connectQueue(ctx, q, c.info.ControllerID); err != nil {
			return err
		}
		c.io = append(c.io, q)
	}
	return nil
}

// fail stops the controller for cause, unless it has stopped already, and
// returns the error it stopped with: its queues stop with it and their
// connections are closed (in the background; Close waits for them).
func (c *Controller) fail(cause error) error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.err = fmt.Errorf("%w: %w", ErrFailed, cause)
	close(c.dead)
	qs := append([]*queue(nil), c.queues...)
	err := c.err
	c.mu.Unlock()
	c.cancel()
	for _, q := range qs {
		q.stop(err)
		c.closers.Add(1)
		go func() {
			defer c.closers.Done()
			q.qp.Close()
		}()
	}
	return err
}

// Err returns why the controller stopped: an error matching ErrFailed
// (with its cause), ErrClosed after Close, or nil while it runs.
func (c *Controller) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Done is closed when the controller stops: it failed, or Close began.
func (c *Controller) Done() <-chan struct{} { return c.dead }

// pick returns the I/O queue for the next command (round robin).
func (c *Controller) pick() (*queue, error) {
	if len(c.io) == 0 {
		return nil, fmt.Errorf("%w: a discovery controller has no I/O queues", ErrNotSupported)
	}
	return c.io[int(c.next.Add(1))%len(c.io)], nil
}
