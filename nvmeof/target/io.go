package target

import (
	"sync/atomic"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// The NVM command set's I/O commands the target runs (NVMe Base 1.4 §6):
// others are Invalid Command Opcode. Each runs on its queue's goroutine;
// the queues of a controller run at once.
var ioHandlers = map[uint8]*handler{
	nvme.NVMRead:        {length: rwLength, exec: execRead},
	nvme.NVMWrite:       {length: rwLength, exec: execWrite},
	nvme.NVMFlush:       {length: flushLength, exec: execFlush},
	nvme.NVMWriteZeroes: {length: writeZeroesLength, exec: execWriteZeroes},
	nvme.NVMDatasetMgmt: {length: dsmLength, longerSGL: true, exec: execDSM},
}

// ioStats counts the I/O served, for the SMART log; updated by every
// queue's goroutine.
type ioStats struct {
	reads, writes           atomic.Uint64 // commands
	bytesRead, bytesWritten atomic.Uint64
}

// checkRange returns the byte offset and length of nlb blocks from slba,
// or LBA Out of Range (NVMe Base 1.4 Figure 128) when they run past the
// namespace.
func (t *Target) checkRange(slba, nlb uint64) (off, n int64, st nvme.Status) {
	if slba >= t.s.blocks || nlb > t.s.blocks-slba {
		return 0, 0, nvme.StatusLBAOutOfRange.WithDNR()
	}
	bs := uint64(t.s.blockSize)
	return int64(slba * bs), int64(nlb * bs), nvme.StatusSuccess
}

// rwLength checks a Read or Write: the namespace, the LBA range and MDTS
// (Invalid Field in Command, NVMe Base 1.4 §5.15.2.1); the SGL must
// describe NLB blocks exactly.
func rwLength(q *queue, c *command) (int, nvme.Status) {
	if c.cmd.NSID != nsid {
		return 0, nvme.StatusInvalidNamespace.WithDNR()
	}
	rw := c.cmd.RW()
	if rw.Control&nvme.RWPRINFOMask != 0 {
		return 0, nvme.StatusInvalidField.WithDNR() // the namespace has no protection information
	}
	_, n, st := q.t.checkRange(rw.SLBA, uint64(rw.Blocks()))
	if !st.Success() {
		return 0, st
	}
	if n > int64(q.t.s.maxTransfer) {
		return 0, nvme.StatusInvalidField.WithDNR()
	}
	return int(n), nvme.StatusSuccess
}

// execRead reads the blocks into c.out.
func execRead(q *queue, c *command) nvme.Status {
	off, _, _ := q.t.checkRange(c.cmd.RW().SLBA, uint64(c.cmd.RW().Blocks()))
	if _, err := q.t.s.backend.ReadAt(c.out, off); err != nil {
		q.t.log.Warn("nvmeof: backend read", "off", off, "len", len(c.out), "err", err)
		return nvme.StatusUnrecoveredReadError
	}
	c.outLen = len(c.out)
	q.t.stats.reads.Add(1)
	q.t.stats.bytesRead.Add(uint64(len(c.out)))
	return nvme.StatusSuccess
}

// execWrite writes c.in; with FUA, or with the volatile write cache
// disabled, it flushes before completing (NVMe Base 1.4 §6.15).
func execWrite(q *queue, c *command) nvme.Status {
	rw := c.cmd.RW()
	off, _, _ := q.t.checkRange(rw.SLBA, uint64(rw.Blocks()))
	if _, err := q.t.s.backend.WriteAt(c.in, off); err != nil {
		q.t.log.Warn("nvmeof: backend write", "off", off, "len", len(c.in), "err", err)
		return nvme.StatusWriteFault
	}
	q.t.stats.writes.Add(1)
	q.t.stats.bytesWritten.Add(uint64(len(c.in)))
	if rw.Control&nvme.RWFUA != 0 || !q.ctrl.vwc.Load() {
		return flush(q)
	}
	return nvme.StatusSuccess
}

// flushLength checks a Flush: the namespace, or every namespace
// (NSID FFFFFFFFh).
func flushLength(q *queue, c *command) (int, nvme.Status) {
	if c.cmd.NSID != nsid && c.cmd.NSID != nvme.NSIDAll {
		return 0, nvme.StatusInvalidNamespace.WithDNR()
	}
	return 0, nvme.StatusSuccess
}

// execFlush flushes the backend (NVMe Base 1.4 §6.8).
func execFlush(q *queue, c *command) nvme.Status { return flush(q) }

// flush makes what was written durable.
func flush(q *queue) nvme.Status {
	if err := q.t.s.backend.Flush(); err != nil {
		q.t.log.Warn("nvmeof: backend flush", "err", err)
		return nvme.StatusWriteFault
	}
	return nvme.StatusSuccess
}

// writeZeroesLength checks a Write Zeroes (NVMe Base 1.4 §6.16): no data;
// MDTS does not apply.
func writeZeroesLength(q *queue, c *command) (int, nvme.Status) {
	if c.cmd.NSID != nsid {
		return 0, nvme.StatusInvalidNamespace.WithDNR()
	}
	rw := c.cmd.RW()
	_, _, st := q.t.checkRange(rw.SLBA, uint64(rw.Blocks()))
	return 0, st
}

// execWriteZeroes zeroes the blocks (deallocating them where the backend
// can: they read as zeros either way, DLFEAT).
func execWriteZeroes(q *queue, c *command) nvme.Status {
	rw := c.cmd.RW()
	off, n, _ := q.t.checkRange(rw.SLBA, uint64(rw.Blocks()))
	if err := zeroRange(q.t.s.backend, off, n); err != nil {
		q.t.log.Warn("nvmeof: backend write zeroes", "off", off, "len", n, "err", err)
		return nvme.StatusWriteFault
	}
	if rw.Control&nvme.RWFUA != 0 || !q.ctrl.vwc.Load() {
		return flush(q)
	}
	return nvme.StatusSuccess
}

// dsmLength checks a Dataset Management: its data is NR+1 ranges of 16
// bytes (NVMe Base 1.4 §6.7); its SGL may describe more (handler's
// longerSGL).
func dsmLength(q *queue, c *command) (int, nvme.Status) {
	if c.cmd.NSID != nsid {
		return 0, nvme.StatusInvalidNamespace.WithDNR()
	}
	return c.cmd.DSM().Ranges() * nvme.DSMRangeLen, nvme.StatusSuccess
}

// execDSM deallocates the ranges when the Deallocate attribute is set
// (they then read as zeros, DLFEAT); the other attributes are hints the
// target does not use. Every range is checked before any is deallocated.
func execDSM(q *queue, c *command) nvme.Status {
	d := c.cmd.DSM()
	if d.Attributes&nvme.DSMDeallocate == 0 {
		return nvme.StatusSuccess
	}
	ranges, err := nvme.DecodeDSMRanges(q.ranges[:0], c.in, d.Ranges())
	q.ranges = ranges
	if err != nil {
		return nvme.StatusDataSGLLengthInvalid.WithDNR()
	}
	for _, r := range ranges {
		if _, _, st := q.t.checkRange(r.SLBA, uint64(r.NLB)); !st.Success() {
			return st
		}
	}
	for _, r := range ranges {
		off, n, _ := q.t.checkRange(r.SLBA, uint64(r.NLB))
		if n == 0 {
			continue
		}
		if err := zeroRange(q.t.s.backend, off, n); err != nil {
			q.t.log.Warn("nvmeof: backend deallocate", "off", off, "len", n, "err", err)
			return nvme.StatusWriteFault
		}
	}
	return nvme.StatusSuccess
}
