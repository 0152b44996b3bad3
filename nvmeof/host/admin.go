package host

import (
	"context"
	"fmt"
	"time"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// connectQueue sends the Fabrics Connect command on q (NVMe over Fabrics
// §3.3): QID, SQSIZE (0's based), on the admin queue the keep-alive
// timeout, and the Connect data with the host's identity and cntlid
// (nvme.CNTLIDDynamic on the admin queue: any controller).
func (c *Controller) connectQueue(ctx context.Context, q *queue, cntlid uint16) (nvme.Completion, error) {
	k := nvme.Connect{RECFMT: 0, QID: q.qid, SQSIZE: uint16(len(q.slots))} // entries-1: 0's based
	if q.qid == 0 {
		k.KATO = uint32(c.s.kato / time.Millisecond)
	}
	data := make([]byte, nvme.ConnectDataLen)
	d := nvme.ConnectData{HOSTID: c.s.hostID, CNTLID: cntlid, SUBNQN: c.subnqn, HOSTNQN: c.s.hostNQN}
	if err := d.Encode(data); err != nil {
		return nvme.Completion{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	r, err := q.exec(ctx, k.Command(0, nvme.SGL{}), data, nil)
	if err != nil {
		return r, fmt.Errorf("nvmeof: queue %d: Connect: %w", q.qid, err)
	}
	return r, nil
}

// getProperty reads the controller property at ofst (4 or 8 bytes).
func (c *Controller) getProperty(ctx context.Context, ofst uint32) (uint64, error) {
	r, err := c.admin.exec(ctx, nvme.PropertyGetCommand(0, ofst, nvme.PropertySizeOf(ofst)), nil, nil)
	if err != nil {
		return 0, fmt.Errorf("nvmeof: Property Get %#x: %w", ofst, err)
	}
	v := r.Result()
	if nvme.PropertySizeOf(ofst) == 4 {
		v &= 0xFFFFFFFF
	}
	return v, nil
}

// setProperty writes a 4-byte controller property.
func (c *Controller) setProperty(ctx context.Context, ofst, v uint32) error {
	if _, err := c.admin.exec(ctx, nvme.PropertySetCommand(0, ofst, 4, uint64(v)), nil, nil); err != nil {
		return fmt.Errorf("nvmeof: Property Set %#x: %w", ofst, err)
	}
	return nil
}

// enable reads CAP and VS, sets CC.EN (NVM command set, 4 KiB pages,
// round robin, 64- and 16-byte queue entries, as Linux's host) and waits
// for CSTS.RDY, bounded by CAP.TO (NVMe Base §7.6.1).
func (c *Controller) enable(ctx context.Context) error {
	v, err := c.getProperty(ctx, nvme.PropCAP)
	if err != nil {
		return err
	}
	c.regs.cap = nvme.ParseCAP(v)
	if v, err = c.getProperty(ctx, nvme.PropVS); err != nil {
		return err
	}
	c.regs.vs = nvme.Version(v)
	if m := c.regs.cap.MPSMIN; m > 0 {
		return fmt.Errorf("%w: the controller's smallest page size is %d bytes (CAP.MPSMIN), not 4096", ErrNotSupported, 4096<<m)
	}
	c.regs.cc = nvme.CC{EN: true, IOSQES: 6, IOCQES: 4}
	if err := c.setProperty(ctx, nvme.PropCC, c.regs.cc.Uint32()); err != nil {
		return err
	}
	timeout := time.Duration(c.regs.cap.TO+1) * 500 * time.Millisecond
	return c.waitStatus(ctx, timeout, func(s nvme.CSTS) (bool, error) {
		if s.CFS {
			return false, fmt.Errorf("%w: CSTS.CFS set (controller fatal status)", ErrNotReady)
		}
		return s.RDY, nil
	})
}

// waitStatus polls CSTS until done says so, at most timeout (and ctx):
// every millisecond at first, backing off to every 100 ms, as the property
// has no notification.
func (c *Controller) waitStatus(parent context.Context, timeout time.Duration, done func(nvme.CSTS) (bool, error)) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	late := func() error {
		if err := parent.Err(); err != nil {
			return err
		}
		return fmt.Errorf("%w: CSTS not as expected within %v", ErrNotReady, timeout)
	}
	delay := time.Millisecond
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return late()
		case <-t.C:
		}
		v, err := c.getProperty(ctx, nvme.PropCSTS)
		if err != nil {
			if ctx.Err() != nil {
				return late()
			}
			return err
		}
		ok, err := done(nvme.ParseCSTS(uint32(v)))
		if ok || err != nil {
			return err
		}
		t.Reset(delay)
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// identify reads the Identify Controller data structure.
func (c *Controller) identify(ctx context.Context) error {
	buf := make([]byte, nvme.IdentifyLen)
	if err := c.identifyCNS(ctx, nvme.CNSController, 0, buf); err != nil {
		return err
	}
	id, err := nvme.DecodeController(buf)
	if err != nil {
		return fmt.Errorf("%w: Identify Controller: %w", ErrProtocol, err)
	}
	c.info.fill(&id, c.regs)
	if m := c.info.MaxDataTransfer; m > 0 && m < c.maxXfer {
		c.maxXfer = m
	}
	return nil
}

// identifyCNS runs Identify with the given CNS and NSID into buf (4096
// bytes).
func (c *Controller) identifyCNS(ctx context.Context, cns uint8, nsid uint32, buf []byte) error {
	if _, err := c.admin.exec(ctx, nvme.Identify{CNS: cns}.Command(0, nsid, nvme.SGL{}), nil, buf); err != nil {
		return fmt.Errorf("nvmeof: Identify (CNS %#x, NSID %d): %w", cns, nsid, err)
	}
	return nil
}

// setQueueCount asks for n I/O submission and completion queues (Set
// Features, Number of Queues, NVMe Base §5.21.1.7) and returns how many of
// both the controller granted.
func (c *Controller) setQueueCount(ctx context.Context, n int) (int, error) {
	f := nvme.Feature{FID: nvme.FeatNumQueues, Value: nvme.NumQueues{NSQ: uint16(n - 1), NCQ: uint16(n - 1)}.Uint32()}
	r, err := c.admin.exec(ctx, f.SetCommand(0, 0), nil, nil)
	if err != nil {
		return 0, fmt.Errorf("nvmeof: Set Features (Number of Queues): %w", err)
	}
	got := nvme.ParseNumQueues(r.DW0)
	return int(min(got.NSQ, got.NCQ)) + 1, nil
}

// getLogPage reads len(buf) bytes (a multiple of 4) of log page lid from
// byte offset off, in commands of at most the transfer limit.
func (c *Controller) getLogPage(ctx context.Context, lid uint8, off uint64, buf []byte) error {
	for len(buf) > 0 {
		n := min(len(buf), c.maxXfer)
		g := nvme.GetLogPage{LID: lid, NUMD: nvme.NUMDFor(n), Offset: off}
		if _, err := c.admin.exec(ctx, g.Command(0, 0, nvme.SGL{}), nil, buf[:n]); err != nil {
			return fmt.Errorf("nvmeof: Get Log Page %#x: %w", lid, err)
		}
		buf, off = buf[n:], off+uint64(n)
	}
	return nil
}
