package host

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"
)

// Opcodes (NVMe Base §5, NVMe over Fabrics §6).
const (
	opFabrics      = 0x7F
	fcPropertySet  = 0x00
	fcConnect      = 0x01
	fcPropertyGet  = 0x04
	opGetLogPage   = 0x02
	opIdentify     = 0x06
	opSetFeatures  = 0x09
	opKeepAlive    = 0x18
	featNumQueues  = 0x07
	connectDataLen = 1024
)

// Controller properties (NVMe Base §3.1.4).
const (
	propCAP  = 0x00
	propVS   = 0x08
	propCC   = 0x14
	propCSTS = 0x1C

	ccEnable   = 1 << 0
	ccIOSQES   = 6 << 16 // 64-byte submission queue entries
	ccIOCQES   = 4 << 20 // 16-byte completion queue entries
	ccSHNormal = 1 << 14
	ccSHMask   = 3 << 14
	cstsRDY    = 1 << 0
	cstsCFS    = 1 << 1
	cstsSHST   = 3 << 2
	cstsSHDone = 2 << 2
)

// fabricsSQE starts a Fabrics command of type fctype.
func fabricsSQE(sqe *[sqeLen]byte, fctype uint8) {
	putSQEHeader(sqe[:], opFabrics, 0)
	sqe[4] = fctype
}

// connectQueue sends the Fabrics Connect command on q (NVMe over Fabrics
// §6.3): QID, SQSIZE (0's based), the keep-alive timeout on the admin
// queue, and the Connect data with the host's identity and cntlid (0xFFFF
// for the admin queue: any controller).
func (c *Controller) connectQueue(ctx context.Context, q *queue, cntlid uint16) (cqe, error) {
	var sqe [sqeLen]byte
	fabricsSQE(&sqe, fcConnect)
	binary.LittleEndian.PutUint16(sqe[42:], q.qid)
	binary.LittleEndian.PutUint16(sqe[44:], uint16(len(q.slots))) // entries-1, 0's based
	if q.qid == 0 {
		binary.LittleEndian.PutUint32(sqe[48:], uint32(c.s.kato/time.Millisecond))
	}
	var data [connectDataLen]byte
	copy(data[0:16], c.s.hostID[:])
	binary.LittleEndian.PutUint16(data[16:], cntlid)
	copy(data[256:256+nqnMax], c.subnqn)
	copy(data[512:512+nqnMax], c.s.hostNQN)
	r, err := q.exec(ctx, &sqe, data[:], nil)
	if err != nil {
		return r, fmt.Errorf("nvmeof: queue %d: Connect: %w", q.qid, err)
	}
	return r, nil
}

// getProperty reads a controller property of 4 or 8 bytes.
func (c *Controller) getProperty(ctx context.Context, off uint32, wide bool) (uint64, error) {
	var sqe [sqeLen]byte
	fabricsSQE(&sqe, fcPropertyGet)
	if wide {
		sqe[40] = 1
	}
	binary.LittleEndian.PutUint32(sqe[44:], off)
	r, err := c.admin.exec(ctx, &sqe, nil, nil)
	if err != nil {
		return 0, fmt.Errorf("nvmeof: Property Get %#x: %w", off, err)
	}
	v := uint64(r.dw0) | uint64(r.dw1)<<32
	if !wide {
		v &= 0xFFFFFFFF
	}
	return v, nil
}

// setProperty writes a 4-byte controller property.
func (c *Controller) setProperty(ctx context.Context, off, v uint32) error {
	var sqe [sqeLen]byte
	fabricsSQE(&sqe, fcPropertySet)
	binary.LittleEndian.PutUint32(sqe[44:], off)
	binary.LittleEndian.PutUint64(sqe[48:], uint64(v))
	if _, err := c.admin.exec(ctx, &sqe, nil, nil); err != nil {
		return fmt.Errorf("nvmeof: Property Set %#x: %w", off, err)
	}
	return nil
}

// enable reads CAP and VS, sets CC.EN (NVM command set, 4 KiB pages,
// round robin, 64- and 16-byte queue entries, as Linux's host) and waits
// for CSTS.RDY, bounded by CAP.TO (NVMe Base §3.5.1).
func (c *Controller) enable(ctx context.Context) error {
	var err error
	if c.regs.cap, err = c.getProperty(ctx, propCAP, true); err != nil {
		return err
	}
	vs, err := c.getProperty(ctx, propVS, false)
	if err != nil {
		return err
	}
	c.regs.vs = uint32(vs)
	if mpsmin := c.regs.cap >> 48 & 0xF; mpsmin > 0 {
		return fmt.Errorf("%w: the controller's smallest page size is %d bytes (CAP.MPSMIN), not 4096", ErrNotSupported, 4096<<mpsmin)
	}
	c.regs.cc = ccEnable | ccIOSQES | ccIOCQES
	if err := c.setProperty(ctx, propCC, c.regs.cc); err != nil {
		return err
	}
	timeout := time.Duration(c.regs.cap>>24&0xFF+1) * 500 * time.Millisecond
	return c.waitStatus(ctx, timeout, func(csts uint32) (bool, error) {
		if csts&cstsCFS != 0 {
			return false, fmt.Errorf("%w: CSTS.CFS set (controller fatal status)", ErrNotReady)
		}
		return csts&cstsRDY != 0, nil
	})
}

// waitStatus polls CSTS until done says so, at most timeout (and ctx):
// every millisecond at first, backing off to every 100 ms, as the
// property has no notification.
func (c *Controller) waitStatus(parent context.Context, timeout time.Duration, done func(uint32) (bool, error)) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	delay := time.Millisecond
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := parent.Err(); err != nil {
				return err
			}
			return fmt.Errorf("%w: CSTS not as expected within %v", ErrNotReady, timeout)
		case <-t.C:
		}
		csts, err := c.getProperty(ctx, propCSTS, false)
		if err != nil {
			if perr := parent.Err(); perr == nil && ctx.Err() != nil {
				return fmt.Errorf("%w: CSTS not as expected within %v", ErrNotReady, timeout)
			}
			return err
		}
		ok, err := done(uint32(csts))
		if ok || err != nil {
			return err
		}
		t.Reset(delay)
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// identify reads the Identify Controller data structure (CNS 01h).
func (c *Controller) identify(ctx context.Context) error {
	buf := make([]byte, identifyLen)
	if err := c.identifyCNS(ctx, 1, 0, buf); err != nil {
		return err
	}
	c.info.parse(buf, c.regs)
	if m := c.info.MaxDataTransfer; m > 0 && m < c.maxXfer {
		c.maxXfer = m
	}
	return nil
}

// identifyCNS runs Identify with the given CNS and NSID into buf (4096
// bytes).
func (c *Controller) identifyCNS(ctx context.Context, cns uint8, nsid uint32, buf []byte) error {
	var sqe [sqeLen]byte
	putSQEHeader(sqe[:], opIdentify, nsid)
	putCDW(sqe[:], 10, uint32(cns))
	if _, err := c.admin.exec(ctx, &sqe, nil, buf); err != nil {
		return fmt.Errorf("nvmeof: Identify (CNS %#x, NSID %d): %w", cns, nsid, err)
	}
	return nil
}

// setQueueCount asks for n I/O submission and completion queues (Set
// Features, Number of Queues, NVMe Base §5.27.1.5) and returns how many of
// both the controller granted.
func (c *Controller) setQueueCount(ctx context.Context, n int) (int, error) {
	var sqe [sqeLen]byte
	putSQEHeader(sqe[:], opSetFeatures, 0)
	putCDW(sqe[:], 10, featNumQueues)
	putCDW(sqe[:], 11, uint32(n-1)|uint32(n-1)<<16)
	r, err := c.admin.exec(ctx, &sqe, nil, nil)
	if err != nil {
		return 0, fmt.Errorf("nvmeof: Set Features (Number of Queues): %w", err)
	}
	return int(min(r.dw0&0xFFFF, r.dw0>>16)) + 1, nil
}

// getLogPage reads len(buf) bytes (a multiple of 4) of log page lid from
// byte offset off, in commands of at most the transfer limit.
func (c *Controller) getLogPage(ctx context.Context, lid uint8, off uint64, buf []byte) error {
	for len(buf) > 0 {
		n := min(len(buf), c.maxXfer)
		var sqe [sqeLen]byte
		putSQEHeader(sqe[:], opGetLogPage, 0)
		numd := uint32(n/4 - 1)
		putCDW(sqe[:], 10, uint32(lid)|numd<<16)
		putCDW(sqe[:], 11, numd>>16)
		putCDW(sqe[:], 12, uint32(off))
		putCDW(sqe[:], 13, uint32(off>>32))
		if _, err := c.admin.exec(ctx, &sqe, nil, buf[:n]); err != nil {
			return fmt.Errorf("nvmeof: Get Log Page %#x: %w", lid, err)
		}
		buf, off = buf[n:], off+uint64(n)
	}
	return nil
}
