package rdmap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/rdma"
)

// termEnv is a core under test with regions of every kind, each between
// canaries, and one 64-byte receive (ID 5) posted.
type termEnv struct {
	t       testing.TB
	table   *mem.Table
	c       *Core
	p       *peer
	bufs    [][]byte
	write   *mem.Region // remote write, local write (the receive buffer)
	read    *mem.Region // remote read
	noAcc   *mem.Region // local write only
	otherPD *mem.Region // another PD, remote read and write
	atomic  *mem.Region // remote atomic, aligned
	inv     *mem.Region // remote write and invalidate
	dead    *mem.Region // remote invalidate, already invalidated
	otherAt *mem.Region // another PD, remote atomic and invalidate
	sink    *mem.Region // local write: Read sinks
}

const canary = 0xCA

func newTermEnv(t testing.TB, o cfg) *termEnv {
	e := &termEnv{t: t, table: mem.NewTable(mem.TableOptions{})}
	e.c = newCore(t, e.table, o)
	e.p = newPeer(t, o)
	reg := func(pd uint32, acc mem.Access) *mem.Region {
		buf := bytes.Repeat([]byte{canary}, 192)
		r, err := e.table.Register(pd, buf[64:128], acc, 0x2000)
		if err != nil {
			t.Fatal(err)
		}
		e.bufs = append(e.bufs, buf)
		return r
	}
	e.write = reg(testPD, mem.AccessRemoteWrite|mem.AccessLocalWrite)
	e.read = reg(testPD, mem.AccessRemoteRead)
	e.noAcc = reg(testPD, mem.AccessLocalWrite)
	e.otherPD = reg(testPD+1, mem.AccessRemoteWrite|mem.AccessRemoteRead)
	e.atomic = reg(testPD, mem.AccessRemoteAtomic)
	e.inv = reg(testPD, mem.AccessRemoteWrite|mem.AccessRemoteInvalidate)
	e.dead = reg(testPD, mem.AccessRemoteWrite|mem.AccessRemoteInvalidate)
	if err := e.table.Invalidate(t.Context(), e.dead); err != nil {
		t.Fatal(err)
	}
	e.otherAt = reg(testPD+1, mem.AccessRemoteAtomic|mem.AccessRemoteInvalidate)
	e.sink = reg(testPD, mem.AccessLocalWrite)
	if _, err := e.c.PostRecv([]RecvWR{{ID: 5, SGL: []rdma.SGE{{STag: stagOf(e.write), Length: 64}}}}); err != nil {
		t.Fatal(err)
	}
	return e
}

// outstanding posts a WR whose request the peer then receives.
func (e *termEnv) outstanding(wr SendWR) {
	post(e.t, e.c, wr)
	e.p.recv(txAll(e.c))
}

// atomicReq is an Atomic Request ULPDU (RFC 7306 §5.2.1).
func atomicReq(msn, aop, stag uint32, to uint64) []byte {
	b := untagged(0xA, true, 0, 1, msn, 0)
	b = binary.BigEndian.AppendUint32(b, aop)
	b = binary.BigEndian.AppendUint32(b, 0x1234)
	b = binary.BigEndian.AppendUint32(b, stag)
	b = binary.BigEndian.AppendUint64(b, to)
	b = binary.BigEndian.AppendUint64(b, 1)
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint64(b, 0)
	return binary.BigEndian.AppendUint64(b, ^uint64(0))
}

type termCase struct {
	name   string
	v2     bool
	pre    func(e *termEnv) // drives the core to the phase
	bad    func(e *termEnv) []byte
	code   rdma.TermCode
	ddpLen int
	rdma   bool
	// queued: the requests of pre stay unanswered (nothing is written
	// before the offending segment arrives).
	queued bool
}

func stagOf(r *mem.Region) uint32 { return uint32(r.STag()) }

// termCases are the Terminates the engine sends today (its terminate,
// extension, V2 and segment tests, docs/wire.md, docs/extensions.md §6),
// each with the offending segment's headers attached.
var termCases = []termCase{
	// DDP header and tagged placement (RFC 5041 §7.2).
	{name: "Write/invalid-STag/DDP-1-0x00", bad: func(e *termEnv) []byte {
		return cat(tagged(0, true, stagOf(e.write)^0xff, e.write.Base()), []byte("data"))
	}, code: rdma.TermDDPInvalidSTag, ddpLen: 14},
	{name: "Write/other-PD/DDP-1-0x02", bad: func(e *termEnv) []byte {
		return cat(tagged(0, true, stagOf(e.otherPD), e.otherPD.Base()), []byte("data"))
	}, code: rdma.TermDDPSTagNotAssoc, ddpLen: 14},
	{name: "Write/no-access/DDP-1-0x00", bad: func(e *termEnv) []byte {
		return cat(tagged(0, true, stagOf(e.noAcc), e.noAcc.Base()), []byte("data"))
	}, code: rdma.TermDDPInvalidSTag, ddpLen: 14},
	{name: "Write/bounds/DDP-1-0x01", bad: func(e *termEnv) []byte {
		return cat(tagged(0, true, stagOf(e.write), e.write.Base()+62), []byte("data"))
	}, code: rdma.TermDDPBaseBounds, ddpLen: 14},
	{name: "Write/TO-wrap/DDP-1-0x03", bad: func(e *termEnv) []byte {
		return cat(tagged(0, true, stagOf(e.write), ^uint64(0)-1), []byte("data"))
	}, code: rdma.TermDDPTOWrap, ddpLen: 14},
	{name: "Write/DDP-version/DDP-1-0x04", bad: func(e *termEnv) []byte {
		b := cat(tagged(0, true, stagOf(e.write), e.write.Base()), []byte("data"))
		b[0] = b[0]&^3 | 2
		return b
	}, code: rdma.TermDDPTaggedVersion, ddpLen: 14},
	{name: "Send/invalid-QN/DDP-2-0x01", bad: func(*termEnv) []byte { return cat(untagged(3, true, 0, 5, 1, 0), []byte("x")) },
		code: rdma.TermDDPInvalidQN, ddpLen: 18},
	{name: "Send/MSN-range/DDP-2-0x03", bad: func(*termEnv) []byte { return cat(untagged(3, true, 0, 0, 9, 0), []byte("x")) },
		code: rdma.TermDDPMSNRange, ddpLen: 18},
	{name: "Send/MO/DDP-2-0x04", bad: func(*termEnv) []byte { return cat(untagged(3, true, 0, 0, 1, 4), []byte("x")) },
		code: rdma.TermDDPInvalidMO, ddpLen: 18},
	{name: "Send/too-long/DDP-2-0x05", bad: func(*termEnv) []byte { return cat(untagged(3, true, 0, 0, 1, 0), make([]byte, 65)) },
		code: rdma.TermDDPTooLong, ddpLen: 18},
	{name: "Send/DDP-version/DDP-2-0x06", bad: func(*termEnv) []byte {
		b := cat(untagged(3, true, 0, 0, 1, 0), []byte("x"))
		b[0] &^= 3
		return b
	}, code: rdma.TermDDPUntaggedVersion, ddpLen: 18},
	{name: "Send/RDMAP-version/RDMAP-2-0x05", bad: func(*termEnv) []byte {
		b := cat(untagged(3, true, 0, 0, 1, 0), []byte("x"))
		b[1] = 0x80 | 3
		return b
	}, code: rdma.TermRDMAPInvalidVersion, ddpLen: 18},
	{name: "opcode-0xC/RDMAP-2-0x06", bad: func(*termEnv) []byte { return cat(untagged(0xC, true, 0, 0, 1, 0), []byte("x")) },
		code: rdma.TermRDMAPUnexpectedOpcode, ddpLen: 18},
	{name: "Send-beyond-posted-receives/DDP-2-0x02", pre: func(e *termEnv) {
		rxAll(e.c, e.p.frame(cat(untagged(3, true, 0, 0, 1, 0), []byte("first"))), 3)
	}, bad: func(*termEnv) []byte { return cat(untagged(3, true, 0, 0, 2, 0), []byte("second")) },
		code: rdma.TermDDPNoBuffer, ddpLen: 18},
	{name: "Sends-interleaved/DDP-2-0x03", pre: func(e *termEnv) {
		rxAll(e.c, e.p.frame(cat(untagged(3, false, 0, 0, 1, 0), []byte("one-a"))), 3)
	}, bad: func(*termEnv) []byte { return cat(untagged(3, true, 0, 0, 2, 0), []byte("two")) },
		code: rdma.TermDDPMSNRange, ddpLen: 18},
	{name: "Send-MO-overlap/DDP-2-0x04", pre: func(e *termEnv) {
		rxAll(e.c, e.p.frame(cat(untagged(3, false, 0, 0, 1, 0), []byte("abcdefgh"))), 3)
	}, bad: func(*termEnv) []byte { return cat(untagged(3, true, 0, 0, 1, 4), []byte("efgh")) },
		code: rdma.TermDDPInvalidMO, ddpLen: 18},

	// Read Requests (RFC 5040 §5.2, §7): the RDMA header attached.
	{name: "ReadRequest/invalid-STag/RDMAP-1-0x00", bad: func(e *termEnv) []byte {
		return cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x100, 0, 8, stagOf(e.read)^1, e.read.Base()))
	}, code: rdma.TermRDMAPInvalidSTag, ddpLen: 18, rdma: true},
	{name: "ReadRequest/access/RDMAP-1-0x02", bad: func(e *termEnv) []byte {
		return cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x100, 0, 8, stagOf(e.noAcc), e.noAcc.Base()))
	}, code: rdma.TermRDMAPAccessRights, ddpLen: 18, rdma: true},
	{name: "ReadRequest/bounds/RDMAP-1-0x01", bad: func(e *termEnv) []byte {
		return cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x100, 0, 65, stagOf(e.read), e.read.Base()))
	}, code: rdma.TermRDMAPBaseBounds, ddpLen: 18, rdma: true},
	{name: "ReadRequest/other-PD/RDMAP-1-0x03", bad: func(e *termEnv) []byte {
		return cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x100, 0, 8, stagOf(e.otherPD), e.otherPD.Base()))
	}, code: rdma.TermRDMAPSTagNotAssoc, ddpLen: 18, rdma: true},
	{name: "ReadRequest/TO-wrap/RDMAP-1-0x04", bad: func(e *termEnv) []byte {
		return cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x100, 0, 8, stagOf(e.read), ^uint64(0)-3))
	}, code: rdma.TermRDMAPTOWrap, ddpLen: 18, rdma: true},
	{name: "ReadRequest/4GiB/RDMAP-1-0x01", bad: func(e *termEnv) []byte {
		return cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x100, 0, 0xffffffff, stagOf(e.read), e.read.Base()))
	}, code: rdma.TermRDMAPBaseBounds, ddpLen: 18, rdma: true},
	{name: "ReadRequest/MSN/DDP-2-0x03", bad: func(e *termEnv) []byte {
		return cat(untagged(1, true, 0, 1, 5, 0), readReqHdr(9, 0, 8, stagOf(e.read), e.read.Base()))
	}, code: rdma.TermDDPMSNRange, ddpLen: 18, rdma: true},
	{name: "ReadRequest/short/RDMAP-2-0xFF", bad: func(e *termEnv) []byte {
		return cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(9, 0, 8, stagOf(e.read), e.read.Base())[:20])
	}, code: rdma.TermRDMAPOpUnspecified, ddpLen: 18},
	{name: "ReadRequest/IRD-exceeded/RDMAP-2-0x07", pre: func(e *termEnv) {
		for msn := uint32(1); msn <= 4; msn++ {
			rxAll(e.c, e.p.frame(cat(untagged(1, true, 0, 1, msn, 0), readReqHdr(9, 0, 8, stagOf(e.read), e.read.Base()))), 3)
		}
	}, bad: func(e *termEnv) []byte {
		return cat(untagged(1, true, 0, 1, 5, 0), readReqHdr(9, 0, 8, stagOf(e.read), e.read.Base()))
	}, code: rdma.TermRDMAPStreamCatastroph, ddpLen: 18, rdma: true, queued: true},

	// Read Responses against this side's outstanding Read.
	{name: "ReadResponse/unsolicited/RDMAP-2-0x06", bad: func(e *termEnv) []byte {
		return cat(tagged(2, true, stagOf(e.write), e.write.Base()), []byte("data"))
	}, code: rdma.TermRDMAPUnexpectedOpcode, ddpLen: 14},
	{name: "ReadResponse/outside-sink/DDP-1-0x01", pre: func(e *termEnv) {
		e.outstanding(SendWR{ID: 3, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(e.sink), Length: 64}}, Remote: rdma.RemoteBuffer{STag: 77}})
	}, bad: func(e *termEnv) []byte {
		return cat(tagged(2, true, stagOf(e.sink), e.sink.Base()+32), make([]byte, 64))
	},
		code: rdma.TermDDPBaseBounds, ddpLen: 14},
	{name: "ReadResponse/wrong-STag/DDP-1-0x00", pre: func(e *termEnv) {
		e.outstanding(SendWR{ID: 3, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(e.sink), Length: 64}}, Remote: rdma.RemoteBuffer{STag: 77}})
	}, bad: func(e *termEnv) []byte {
		return cat(tagged(2, true, stagOf(e.write), e.write.Base()), make([]byte, 64))
	},
		code: rdma.TermDDPInvalidSTag, ddpLen: 14},
	{name: "ReadResponse/short-at-L/DDP-1-0x01", pre: func(e *termEnv) {
		e.outstanding(SendWR{ID: 3, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(e.sink), Length: 64}}, Remote: rdma.RemoteBuffer{STag: 77}})
	}, bad: func(e *termEnv) []byte { return cat(tagged(2, true, stagOf(e.sink), e.sink.Base()), make([]byte, 60)) },
		code: rdma.TermDDPBaseBounds, ddpLen: 14},
	{name: "ReadResponse-before-AtomicResponse/RDMAP-2-0x06", pre: func(e *termEnv) {
		e.outstanding(SendWR{ID: 3, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, Remote: rdma.RemoteBuffer{STag: 77}})
		e.outstanding(SendWR{ID: 4, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(e.sink), Length: 64}}, Remote: rdma.RemoteBuffer{STag: 77}})
	}, bad: func(e *termEnv) []byte { return cat(tagged(2, true, stagOf(e.sink), e.sink.Base()), make([]byte, 64)) },
		code: rdma.TermRDMAPUnexpectedOpcode, ddpLen: 14},

	// Send with Invalidate (RFC 5040 §5.3): 0x09, type 1 for an access
	// failure, type 2 otherwise, as siw.
	{name: "SendInv/unknown-STag/RDMAP-2-0x09", bad: func(e *termEnv) []byte {
		return cat(untagged(4, true, stagOf(e.inv)^0x100, 0, 1, 0), []byte("bye"))
	}, code: rdma.TermRDMAPOpInvalidate, ddpLen: 18},
	{name: "SendInv/already-invalid/RDMAP-2-0x09", bad: func(e *termEnv) []byte {
		return cat(untagged(4, true, stagOf(e.dead), 0, 1, 0), []byte("bye"))
	}, code: rdma.TermRDMAPOpInvalidate, ddpLen: 18},
	{name: "SendInv/other-PD/RDMAP-1-0x09", bad: func(e *termEnv) []byte {
		return cat(untagged(4, true, stagOf(e.otherAt), 0, 1, 0), []byte("bye"))
	}, code: rdma.TermRDMAPProtInvalidate, ddpLen: 18},
	{name: "SendInv/not-invalidatable/RDMAP-1-0x09", bad: func(e *termEnv) []byte {
		return cat(untagged(4, true, stagOf(e.write), 0, 1, 0), []byte("bye"))
	}, code: rdma.TermRDMAPProtInvalidate, ddpLen: 18},

	// RFC 7306 (docs/extensions.md §6): the DDP header, no RDMA header.
	{name: "Atomic/misaligned/RDMAP-2-0x07", bad: func(e *termEnv) []byte { return atomicReq(1, 0, stagOf(e.atomic), e.atomic.Base()+4) },
		code: rdma.TermRDMAPStreamCatastroph, ddpLen: 18},
	{name: "Atomic/invalid-STag/RDMAP-1-0x00", bad: func(e *termEnv) []byte { return atomicReq(1, 0, stagOf(e.atomic)^1, e.atomic.Base()) },
		code: rdma.TermRDMAPInvalidSTag, ddpLen: 18},
	{name: "Atomic/other-PD/RDMAP-1-0x03", bad: func(e *termEnv) []byte { return atomicReq(1, 0, stagOf(e.otherAt), e.otherAt.Base()) },
		code: rdma.TermRDMAPSTagNotAssoc, ddpLen: 18},
	{name: "Atomic/no-atomic-access/RDMAP-1-0x02", bad: func(e *termEnv) []byte { return atomicReq(1, 0, stagOf(e.write), e.write.Base()) },
		code: rdma.TermRDMAPAccessRights, ddpLen: 18},
	{name: "Atomic/out-of-bounds/RDMAP-1-0x01", bad: func(e *termEnv) []byte { return atomicReq(1, 0, stagOf(e.atomic), e.atomic.Base()+64) },
		code: rdma.TermRDMAPBaseBounds, ddpLen: 18},
	{name: "Atomic/misaligned-and-out-of-bounds/RDMAP-1-0x01", bad: func(e *termEnv) []byte { return atomicReq(1, 0, stagOf(e.atomic), e.atomic.Base()+60) },
		code: rdma.TermRDMAPBaseBounds, ddpLen: 18},
	{name: "Atomic/unknown-AOpCode/RDMAP-2-0x06", bad: func(e *termEnv) []byte { return atomicReq(1, 1, stagOf(e.atomic), e.atomic.Base()) },
		code: rdma.TermRDMAPUnexpectedOpcode, ddpLen: 18},
	{name: "Atomic/MSN/DDP-2-0x03", bad: func(e *termEnv) []byte { return atomicReq(2, 0, stagOf(e.atomic), e.atomic.Base()) },
		code: rdma.TermDDPMSNRange, ddpLen: 18},
	{name: "Atomic/short/RDMAP-2-0xFF", bad: func(e *termEnv) []byte { return atomicReq(1, 0, stagOf(e.atomic), e.atomic.Base())[:60] },
		code: rdma.TermRDMAPOpUnspecified, ddpLen: 18},
	{name: "Atomic/IRD-exceeded/RDMAP-2-0x07", pre: func(e *termEnv) {
		for msn := uint32(1); msn <= 4; msn++ {
			rxAll(e.c, e.p.frame(atomicReq(msn, 0, stagOf(e.atomic), e.atomic.Base())), 3)
		}
	}, bad: func(e *termEnv) []byte { return atomicReq(5, 0, stagOf(e.atomic), e.atomic.Base()) },
		code: rdma.TermRDMAPStreamCatastroph, ddpLen: 18, queued: true},
	{name: "Immediate/7-bytes/RDMAP-2-0xFF", bad: func(*termEnv) []byte { return cat(untagged(8, true, 0, 0, 1, 0), make([]byte, 7)) },
		code: rdma.TermRDMAPOpUnspecified, ddpLen: 18},
	{name: "Immediate/9-bytes/RDMAP-2-0xFF", bad: func(*termEnv) []byte { return cat(untagged(9, true, 0, 0, 1, 0), make([]byte, 9)) },
		code: rdma.TermRDMAPOpUnspecified, ddpLen: 18},
	{name: "Immediate/MSN/DDP-2-0x03", bad: func(*termEnv) []byte { return cat(untagged(8, true, 0, 0, 3, 0), make([]byte, 8)) },
		code: rdma.TermDDPMSNRange, ddpLen: 18},
	{name: "Immediate/no-receive/DDP-2-0x02", pre: func(e *termEnv) {
		rxAll(e.c, e.p.frame(cat(untagged(8, true, 0, 0, 1, 0), make([]byte, 8))), 3)
	}, bad: func(*termEnv) []byte { return cat(untagged(8, true, 0, 0, 2, 0), make([]byte, 8)) },
		code: rdma.TermDDPNoBuffer, ddpLen: 18},
	{name: "AtomicResponse/unsolicited/RDMAP-2-0x06", bad: func(*termEnv) []byte { return cat(untagged(0xB, true, 0, 3, 1, 0), make([]byte, 12)) },
		code: rdma.TermRDMAPUnexpectedOpcode, ddpLen: 18},
	{name: "AtomicResponse/wrong-ID/RDMAP-2-0xFF", pre: func(e *termEnv) {
		e.outstanding(SendWR{ID: 3, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, Remote: rdma.RemoteBuffer{STag: 77}})
	}, bad: func(*termEnv) []byte {
		return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(untagged(0xB, true, 0, 3, 1, 0), 99), 7)
	}, code: rdma.TermRDMAPOpUnspecified, ddpLen: 18},
	{name: "AtomicResponse/MSN/DDP-2-0x03", pre: func(e *termEnv) {
		e.outstanding(SendWR{ID: 3, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, Remote: rdma.RemoteBuffer{STag: 77}})
	}, bad: func(*termEnv) []byte { return cat(untagged(0xB, true, 0, 3, 2, 0), make([]byte, 12)) },
		code: rdma.TermDDPMSNRange, ddpLen: 18},
	{name: "AtomicResponse/before-ReadResponse/RDMAP-2-0x06", pre: func(e *termEnv) {
		e.outstanding(SendWR{ID: 3, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(e.sink), Length: 64}}, Remote: rdma.RemoteBuffer{STag: 77}})
		e.outstanding(SendWR{ID: 4, Op: rdma.OpFetchAdd, Flags: rdma.Signaled, Remote: rdma.RemoteBuffer{STag: 77}})
	}, bad: func(*termEnv) []byte { return cat(untagged(0xB, true, 0, 3, 1, 0), make([]byte, 12)) },
		code: rdma.TermRDMAPUnexpectedOpcode, ddpLen: 18},

	// Single-segment messages and continuing segments (docs/wire.md,
	// defects 4 and 11).
	{name: "Segment/Read-Request-L0/DDP-2-0x05", bad: func(e *termEnv) []byte {
		return cat(untagged(1, false, 0, 1, 1, 0), readReqHdr(9, 0, 8, stagOf(e.read), e.read.Base()))
	}, code: rdma.TermDDPTooLong, ddpLen: 18},
	{name: "Segment/Read-Request-MO-8/DDP-2-0x04", bad: func(e *termEnv) []byte {
		return cat(untagged(1, true, 0, 1, 1, 8), readReqHdr(9, 0, 8, stagOf(e.read), e.read.Base()))
	}, code: rdma.TermDDPInvalidMO, ddpLen: 18},
	{name: "Segment/Atomic-Request-L0/DDP-2-0x05", bad: func(e *termEnv) []byte {
		b := atomicReq(1, 0, stagOf(e.atomic), e.atomic.Base())
		b[0] &^= 0x40
		return b
	}, code: rdma.TermDDPTooLong, ddpLen: 18},
	{name: "Segment/Atomic-Request-MO-8/DDP-2-0x04", bad: func(e *termEnv) []byte {
		b := atomicReq(1, 0, stagOf(e.atomic), e.atomic.Base())
		binary.BigEndian.PutUint32(b[14:], 8)
		return b
	}, code: rdma.TermDDPInvalidMO, ddpLen: 18},
	{name: "Segment/Atomic-Response-MO-8/DDP-2-0x04", bad: func(*termEnv) []byte { return cat(untagged(0xB, true, 0, 3, 1, 8), make([]byte, 12)) },
		code: rdma.TermDDPInvalidMO, ddpLen: 18},
	{name: "Segment/Immediate-Data-L0/DDP-2-0x05", bad: func(*termEnv) []byte { return cat(untagged(8, false, 0, 0, 1, 0), make([]byte, 8)) },
		code: rdma.TermDDPTooLong, ddpLen: 18},
	{name: "Segment/Immediate-Data-MO-8/DDP-2-0x04", bad: func(*termEnv) []byte { return cat(untagged(8, true, 0, 0, 1, 8), make([]byte, 8)) },
		code: rdma.TermDDPInvalidMO, ddpLen: 18},
	{name: "Segment/Send-ended-by-Send-with-SE/RDMAP-2-0x06", pre: func(e *termEnv) {
		rxAll(e.c, e.p.frame(cat(untagged(3, false, 0, 0, 1, 0), []byte("abcd"))), 3)
	}, bad: func(*termEnv) []byte { return cat(untagged(5, true, 0, 0, 1, 4), []byte("efgh")) },
		code: rdma.TermRDMAPUnexpectedOpcode, ddpLen: 18},
	{name: "Segment/Immediate-continuing-a-Send/RDMAP-2-0x06", pre: func(e *termEnv) {
		rxAll(e.c, e.p.frame(untagged(3, false, 0, 0, 1, 0)), 3)
	}, bad: func(*termEnv) []byte { return cat(untagged(8, true, 0, 0, 1, 0), make([]byte, 8)) },
		code: rdma.TermRDMAPUnexpectedOpcode, ddpLen: 18},
	{name: "Segment/Immediate-during-a-Send/DDP-2-0x03", pre: func(e *termEnv) {
		rxAll(e.c, e.p.frame(untagged(3, false, 0, 0, 1, 0)), 3)
	}, bad: func(*termEnv) []byte { return cat(untagged(8, true, 0, 0, 2, 0), make([]byte, 8)) },
		code: rdma.TermDDPMSNRange, ddpLen: 18},

	// The V2 draft (docs/extensions.md §9).
	{name: "V2/RV2-not-negotiated/RDMAP-2-0x05", bad: func(*termEnv) []byte { return cat(v2(untagged(0, true, 0, 0, 1, 0), 0x13), make([]byte, 8)) },
		code: rdma.TermRDMAPInvalidVersion, ddpLen: 18},
	{name: "V2/RV1-after-V2/RDMAP-2-0x05", v2: true, bad: func(*termEnv) []byte { return cat(untagged(3, true, 0, 0, 1, 0), []byte("x")) },
		code: rdma.TermRDMAPInvalidVersion, ddpLen: 18},
	{name: "V2/undefined-opcode-0x17/RDMAP-2-0x06", v2: true, bad: func(*termEnv) []byte { return cat(v2(untagged(0, true, 0, 0, 1, 0), 0x17), []byte("x")) },
		code: rdma.TermRDMAPUnexpectedOpcode, ddpLen: 18},
	{name: "V2/SendImm-last-7-bytes/RDMAP-2-0xFF", v2: true, bad: func(*termEnv) []byte { return cat(v2(untagged(0, true, 0, 0, 1, 0), 0x13), make([]byte, 7)) },
		code: rdma.TermRDMAPOpUnspecified, ddpLen: 18},
	{name: "V2/SendImm-last-with-payload/RDMAP-2-0xFF", v2: true, bad: func(*termEnv) []byte { return cat(v2(untagged(0, true, 0, 0, 1, 0), 0x13), make([]byte, 12)) },
		code: rdma.TermRDMAPOpUnspecified, ddpLen: 18},
	{name: "V2/SendImm-MO-gap/DDP-2-0x04", v2: true, pre: func(e *termEnv) {
		rxAll(e.c, e.p.frame(cat(v2(untagged(0, false, 0, 0, 1, 0), 0x13), []byte("abcd"))), 3)
	}, bad: func(*termEnv) []byte { return cat(v2(untagged(0, true, 0, 0, 1, 6), 0x13), make([]byte, 8)) },
		code: rdma.TermDDPInvalidMO, ddpLen: 18},
	{name: "V2/SendImm-ended-by-Send/RDMAP-2-0x06", v2: true, pre: func(e *termEnv) {
		rxAll(e.c, e.p.frame(cat(v2(untagged(0, false, 0, 0, 1, 0), 0x13), []byte("abcd"))), 3)
	}, bad: func(*termEnv) []byte { return cat(v2(untagged(0, true, 0, 0, 1, 4), 0x3), []byte("efgh")) },
		code: rdma.TermRDMAPUnexpectedOpcode, ddpLen: 18},
	{name: "V2/Send-ended-by-SendImm/RDMAP-2-0x06", v2: true, pre: func(e *termEnv) {
		rxAll(e.c, e.p.frame(cat(v2(untagged(0, false, 0, 0, 1, 0), 0x3), []byte("abcd"))), 3)
	}, bad: func(*termEnv) []byte { return cat(v2(untagged(0, true, 0, 0, 1, 4), 0x13), make([]byte, 8)) },
		code: rdma.TermRDMAPUnexpectedOpcode, ddpLen: 18},
	{name: "V2/ReadV2Request-L0/DDP-2-0x05", v2: true, bad: func(e *termEnv) []byte {
		return readV2Req(v2(untagged(0, false, 0, 1, 1, 0), 0x11), 16, stagOf(e.read), e.read.Base())
	}, code: rdma.TermDDPTooLong, ddpLen: 18},
	{name: "V2/ReadV2Request-MO-8/DDP-2-0x04", v2: true, bad: func(e *termEnv) []byte {
		return readV2Req(v2(untagged(0, true, 0, 1, 1, 8), 0x11), 16, stagOf(e.read), e.read.Base())
	}, code: rdma.TermDDPInvalidMO, ddpLen: 18},
	{name: "V2/ReadV2Request-invalid-STag/RDMAP-1-0x00", v2: true, bad: func(e *termEnv) []byte {
		return readV2Req(v2(untagged(0, true, 0, 1, 1, 0), 0x11), 16, stagOf(e.read)^1, e.read.Base())
	}, code: rdma.TermRDMAPInvalidSTag, ddpLen: 18},
	{name: "V2/ReadV2Response-unsolicited/RDMAP-2-0x06", v2: true, bad: func(*termEnv) []byte { return cat(v2(untagged(0, true, 0, 3, 1, 0), 0x12), make([]byte, 4)) },
		code: rdma.TermRDMAPUnexpectedOpcode, ddpLen: 18},
	{name: "V2/ReadV2Response-too-long/DDP-2-0x05", v2: true, pre: readV2Outstanding,
		bad: func(*termEnv) []byte { return cat(v2(untagged(0, true, 0, 3, 1, 0), 0x12), make([]byte, 17)) }, code: rdma.TermDDPTooLong, ddpLen: 18},
	{name: "V2/ReadV2Response-short-at-L/DDP-2-0x04", v2: true, pre: readV2Outstanding,
		bad: func(*termEnv) []byte { return cat(v2(untagged(0, true, 0, 3, 1, 0), 0x12), make([]byte, 15)) }, code: rdma.TermDDPInvalidMO, ddpLen: 18},
	{name: "V2/ReadV2Response-MO-gap/DDP-2-0x04", v2: true, pre: readV2Outstanding,
		bad: func(*termEnv) []byte { return cat(v2(untagged(0, false, 0, 3, 1, 4), 0x12), make([]byte, 4)) }, code: rdma.TermDDPInvalidMO, ddpLen: 18},
	{name: "V2/ReadV2Response-MSN/DDP-2-0x03", v2: true, pre: readV2Outstanding,
		bad: func(*termEnv) []byte { return cat(v2(untagged(0, true, 0, 3, 2, 0), 0x12), make([]byte, 16)) }, code: rdma.TermDDPMSNRange, ddpLen: 18},
	{name: "V2/ReadV2Response-continued-by-AtomicResponse/RDMAP-2-0x06", v2: true, pre: func(e *termEnv) {
		readV2Outstanding(e)
		rxAll(e.c, e.p.frame(cat(v2(untagged(0, false, 0, 3, 1, 0), 0x12), make([]byte, 8))), 3)
	}, bad: func(*termEnv) []byte { return cat(v2(untagged(0, true, 0, 3, 1, 0), 0xB), make([]byte, 12)) },
		code: rdma.TermRDMAPUnexpectedOpcode, ddpLen: 18},
}

// readV2Req appends a Read V2 Request header to the DDP header h.
func readV2Req(h []byte, size, stag uint32, to uint64) []byte {
	h = binary.BigEndian.AppendUint32(h, size)
	h = binary.BigEndian.AppendUint32(h, stag)
	return binary.BigEndian.AppendUint64(h, to)
}

// readV2Outstanding posts a 16-byte Read V2 and lets the peer receive its
// request.
func readV2Outstanding(e *termEnv) {
	e.outstanding(SendWR{ID: 7, Op: rdma.OpReadV2, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(e.sink), Length: 16}}, Remote: rdma.RemoteBuffer{STag: 5}})
}

// TestTerminates: each violation gives its Terminate (at the next FPDU
// boundary, with the offending segment's length and headers), the QP
// moves to TERMINATE, asks to half-close once the Terminate was written,
// and the peer's close moves it to ERROR with every WR flushed; no byte of
// registered memory outside what legal messages wrote changes.
func TestTerminates(t *testing.T) {
	for _, tc := range termCases {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults()
			o.v2 = tc.v2
			e := newTermEnv(t, o)
			if tc.pre != nil {
				tc.pre(e)
				if !tc.queued {
					e.p.recv(txAll(e.c))
				}
				if e.c.State() != rdma.StateRTS {
					t.Fatalf("after the legal part: %v (%v)", e.c.State(), e.c.Err())
				}
			}
			bad := tc.bad(e)
			rxAll(e.c, e.p.frame(bad), 5)
			got := e.p.recv(txAll(e.c))
			if len(got) == 0 {
				t.Fatalf("no Terminate: state %v (%v)", e.c.State(), e.c.Err())
			}
			want := termULPDU(tc.code, bad, tc.ddpLen, tc.rdma)
			if tc.v2 {
				want[1] = 0x80 | 7
			}
			if term := got[len(got)-1]; !bytes.Equal(term, want) {
				t.Fatalf("Terminate\n got % x\nwant % x", term, want)
			}
			checkTerminated(t, e, tc.code)
		})
	}
}

// checkTerminated checks a core that sent a Terminate of code: TERMINATE,
// the half-close asked for, input drained, then ERROR at the peer's close
// with the receive flushed and the canaries intact.
func checkTerminated(t *testing.T, e *termEnv, code rdma.TermCode) {
	t.Helper()
	c := e.c
	var te *TerminateError
	if c.State() != rdma.StateTerminate || !errors.As(c.Err(), &te) || !te.Sent || te.Code != code {
		t.Fatalf("state %v, error %v: want TERMINATE with a sent Terminate %v", c.State(), c.Err(), code)
	}
	if !c.WantHalfClose() || c.WantClose() || !c.Waiting() {
		t.Fatalf("half-close %v, close %v, waiting %v", c.WantHalfClose(), c.WantClose(), c.Waiting())
	}
	if n := rxAll(c, make([]byte, 10000), 4096); n != 10000 {
		t.Fatalf("drained %d octets of 10000", n)
	}
	c.RxEOF(nil)
	if c.State() != rdma.StateError || !c.WantClose() || c.Err() != te {
		t.Fatalf("after the peer's close: %v (%v), close %v", c.State(), c.Err(), c.WantClose())
	}
	for _, comp := range poll(c) {
		if comp.Status == rdma.StatusSuccess && comp.Queue == RecvQueue && comp.ID == 5 {
			continue // a legal Send before the violation
		}
		if comp.Status == rdma.StatusSuccess {
			t.Fatalf("completion %+v after the Terminate", comp)
		}
	}
	for _, b := range e.bufs {
		for i := range 64 {
			if b[i] != canary || b[128+i] != canary {
				t.Fatal("canary overwritten")
			}
		}
	}
}

// TestFramingTerminates: a bad CRC, a ULPDU_Length beyond the receive
// bound or too short for a DDP header, and a stream cut inside an FPDU are
// Terminates without headers (as the Reader reports them).
func TestFramingTerminates(t *testing.T) {
	rtr := tagged(0, true, 1, 0)
	frame := func(u []byte, crc func(uint32) uint32) []byte {
		f := binary.BigEndian.AppendUint16(nil, uint16(len(u)))
		f = append(f, u...)
		f = append(f, make([]byte, fpdu.PadLen(len(u)))...)
		return binary.LittleEndian.AppendUint32(f, crc(fpdu.CRC32c(f)))
	}
	good := func(v uint32) uint32 { return v }
	cases := []struct {
		name   string
		stream []byte
		eof    bool
		code   rdma.TermCode
		max    int
	}{
		{"CRC/LLP-0x02", frame(rtr, func(v uint32) uint32 { return v ^ 1 }), false, rdma.TermLLPCRC, 0},
		{"ULPDU-too-long/LLP-0x03", frame(cat(rtr, make([]byte, 200)), good), false, rdma.TermLLPMarker, 100},
		{"ULPDU-too-short/LLP-0x03", frame(rtr[:10], good), false, rdma.TermLLPMarker, 0},
		{"untagged-header-cut/DDP-0-0x00", frame(untagged(3, true, 0, 0, 1, 0)[:16], good), false, rdma.TermDDPCatastrophic, 0},
		{"truncated/LLP-0x01", frame(rtr, good)[:9], true, rdma.TermLLPConnLost, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults()
			o.framing.MaxULPDU = tc.max
			e := newTermEnv(t, o)
			rxAll(e.c, tc.stream, 3)
			if tc.eof {
				e.c.RxEOF(nil)
			}
			got := e.p.recv(txAll(e.c))
			want := cat(untagged(7, true, 0, 2, 1, 0), []byte{byte(tc.code.Layer())<<4 | byte(tc.code.Type()), tc.code.Code(), 0, 0})
			if len(got) != 1 || !bytes.Equal(got[0], want) {
				t.Fatalf("sent % x, want the Terminate % x", got, want)
			}
			var te *TerminateError
			if !errors.As(e.c.Err(), &te) || !te.Sent || te.Code != tc.code {
				t.Fatalf("error %v", e.c.Err())
			}
			if tc.eof != (e.c.State() == rdma.StateError) {
				t.Fatalf("state %v: the peer's end of stream %v", e.c.State(), tc.eof)
			}
			if tc.code == rdma.TermLLPCRC && e.c.Stats().CRCErrors != 1 {
				t.Fatalf("CRC errors counted: %d", e.c.Stats().CRCErrors)
			}
		})
	}
}

// TestTerminateReceived: the peer's Terminate moves the QP to TERMINATE,
// WantClose at once, no more input; Close flushes, the oldest outstanding
// WR with the status the code suggests, the rest flushed, in order.
func TestTerminateReceived(t *testing.T) {
	o := defaults()
	e := newTermEnv(t, o)
	e.outstanding(SendWR{ID: 1, Op: rdma.OpRead, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(e.sink), Length: 64}}, Remote: rdma.RemoteBuffer{STag: 77}})
	post(t, e.c, SendWR{ID: 2, Op: rdma.OpSend, Flags: rdma.Signaled})
	code := rdma.TermRDMAPInvalidSTag
	term := cat(untagged(7, true, 0, 2, 1, 0), []byte{byte(code.Layer())<<4 | byte(code.Type()), code.Code(), 0, 0})
	rxAll(e.c, e.p.frame(term), 1)
	var te *TerminateError
	if e.c.State() != rdma.StateTerminate || !e.c.WantClose() || !errors.As(e.c.Err(), &te) || te.Sent || te.Code != code {
		t.Fatalf("state %v, close %v, error %v", e.c.State(), e.c.WantClose(), e.c.Err())
	}
	if e.c.RxBuf() != nil || e.c.WantTx() || len(txAll(e.c)) != 0 {
		t.Fatal("input or output after the peer's Terminate")
	}
	e.c.Close()
	got := poll(e.c)
	wantComps(t, got, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1, Status: rdma.StatusRemoteAccess}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2, Status: rdma.StatusFlushed}},
		Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 5, Status: rdma.StatusFlushed}})
	if got[0].Err != te || e.c.Err() != te {
		t.Fatalf("errors %v, %v", got[0].Err, e.c.Err())
	}
	if got := e.c.Stats().Terminates(); len(got) != 1 || got[0].Code != code || got[0].Received != 1 {
		t.Fatalf("counted %+v", got)
	}
}

// TestRefusedFPDUCounted: an FPDU refused with a Terminate (a Send that
// finds no receive, a bad CRC) counts as received, as the peer counted it
// as sent: FPDUsSent and FPDUsReceived of the two sides agree.
func TestRefusedFPDUCounted(t *testing.T) {
	send := untagged(3, true, 0, 0, 1, 0)
	for _, tc := range []struct {
		name   string
		ulpdus [][]byte
	}{
		{"no-receive", [][]byte{send, untagged(3, true, 0, 0, 2, 0)}}, // the first takes receive 5
		{"bad-MSN", [][]byte{untagged(3, true, 0, 0, 9, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTermEnv(t, defaults())
			rxAll(e.c, e.p.frame(tc.ulpdus...), 7)
			if e.c.State() != rdma.StateTerminate {
				t.Fatalf("state %v, error %v", e.c.State(), e.c.Err())
			}
			var bytes uint64
			for _, u := range tc.ulpdus {
				bytes += uint64(len(u))
			}
			if s := e.c.Stats(); s.FPDUsReceived != uint64(len(tc.ulpdus)) || s.BytesReceived != bytes {
				t.Fatalf("received %d FPDUs / %d bytes, want %d / %d", s.FPDUsReceived, s.BytesReceived, len(tc.ulpdus), bytes)
			}
		})
	}
	t.Run("bad-CRC", func(t *testing.T) {
		e := newTermEnv(t, defaults())
		f := e.p.frame(send)
		f[len(f)-1] ^= 1
		rxAll(e.c, f, 5)
		if s := e.c.Stats(); s.CRCErrors != 1 || s.FPDUsReceived != 1 || s.BytesReceived != uint64(len(send)) {
			t.Fatalf("CRC errors %d, received %d FPDUs / %d bytes", s.CRCErrors, s.FPDUsReceived, s.BytesReceived)
		}
	})
}

// TestBrokenFirstFPDUReleasesHold: an MPA Responder (Framing.
// HoldSendUntilReceive) whose first received FPDU is broken before its DDP
// header could be read (a ULPDU_Length too short for one, a bad marker)
// still sends the Terminate: the FPDU has arrived (RFC 5044 §7.1.2).
func TestBrokenFirstFPDUReleasesHold(t *testing.T) {
	o := defaults()
	o.framing.HoldSendUntilReceive = true
	e := newTermEnv(t, o)
	u := []byte{0x41, 0x43, 0x01, 0x00} // a ULPDU_Length of 4: no DDP header fits
	f := binary.BigEndian.AppendUint16(nil, uint16(len(u)))
	f = append(f, u...)
	f = append(f, make([]byte, fpdu.PadLen(len(u)))...)
	f = binary.LittleEndian.AppendUint32(f, fpdu.CRC32c(f))
	rxAll(e.c, f, 3)
	code := rdma.TermLLPMarker
	want := cat(untagged(7, true, 0, 2, 1, 0), []byte{byte(code.Layer())<<4 | byte(code.Type()), code.Code(), 0, 0})
	if got := e.p.recv(txAll(e.c)); len(got) != 1 || !bytes.Equal(got[0], want) {
		t.Fatalf("sent % x, want the Terminate % x", got, want)
	}
}

// TestTerminateWhileWriteOut: the peer's Terminate arrives while the
// octets of a Write are handed out (TxBufs) and not yet reported written:
// the peer can only be answering octets the socket accepted, so WantClose
// waits for TxDone, and the Write, handed to TCP, completes with success;
// only the work behind it is flushed.
func TestTerminateWhileWriteOut(t *testing.T) {
	e := newTermEnv(t, defaults())
	post(t, e.c, SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(e.sink), Length: 64}}, Remote: rdma.RemoteBuffer{STag: 77}})
	n := bufsLen(e.c.TxBufs(nil))
	post(t, e.c, SendWR{ID: 2, Op: rdma.OpSend, Flags: rdma.Signaled})
	code := rdma.TermDDPInvalidSTag
	term := cat(untagged(7, true, 0, 2, 1, 0), []byte{byte(code.Layer())<<4 | byte(code.Type()), code.Code(), 0, 0})
	rxAll(e.c, e.p.frame(term), 1)
	if e.c.State() != rdma.StateTerminate || e.c.WantClose() {
		t.Fatalf("state %v, close %v with the Write's octets handed out", e.c.State(), e.c.WantClose())
	}
	e.c.TxDone(n)
	if !e.c.WantClose() {
		t.Fatal("no close after TxDone")
	}
	e.c.Close()
	wantComps(t, poll(e.c), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1, Status: rdma.StatusSuccess}}, Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 2, Status: rdma.StatusRemoteAccess}},
		Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 5, Status: rdma.StatusFlushed}})
}

// TestPeerCloseWhileSendOut: the peer's close (its FIN) arrives while the
// octets of a Send are handed out (TxBufs) and not yet reported written:
// the Send, handed to TCP, completes with success at TxDone, and only then
// does the QP go down with ErrPeerDisconnected.
func TestPeerCloseWhileSendOut(t *testing.T) {
	e := newTermEnv(t, defaults())
	post(t, e.c, SendWR{ID: 1, Op: rdma.OpSend, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(e.sink), Length: 64}}})
	n := bufsLen(e.c.TxBufs(nil))
	e.c.RxEOF(nil)
	if e.c.State() != rdma.StateRTS || e.c.WantClose() {
		t.Fatalf("state %v, close %v with the Send's octets handed out", e.c.State(), e.c.WantClose())
	}
	e.c.TxDone(n)
	if e.c.State() != rdma.StateError || !errors.Is(e.c.Err(), ErrPeerDisconnected) {
		t.Fatalf("after TxDone: state %v, error %v", e.c.State(), e.c.Err())
	}
	wantComps(t, poll(e.c), Completion{Queue: SendQueue, Completion: rdma.Completion{ID: 1, Status: rdma.StatusSuccess}}, Completion{Queue: RecvQueue, Completion: rdma.Completion{ID: 5, Status: rdma.StatusFlushed}})
}

// TestTerminateThenEOFWhileWriteOut: the peer's Terminate and then its
// close (or reset) arrive while the octets of a Write are handed out: the
// end of the stream waits for TxDone like the Terminate does, so the
// Write, handed to TCP, completes with success (found on the portable
// path, whose blocking writes report late).
func TestTerminateThenEOFWhileWriteOut(t *testing.T) {
	for _, eofErr := range []error{nil, errors.New("connection reset by peer")} {
		e := newTermEnv(t, defaults())
		post(t, e.c, SendWR{ID: 1, Op: rdma.OpWrite, Flags: rdma.Signaled, SGL: []rdma.SGE{{STag: stagOf(e.sink), Length: 64}}, Remote: rdma.RemoteBuffer{STag: 77}})
		n := bufsLen(e.c.TxBufs(nil))
		code := rdma.TermDDPInvalidSTag
		term := cat(untagged(7, true, 0, 2, 1, 0), []byte{byte(code.Layer())<<4 | byte(code.Type()), code.Code(), 0, 0})
		rxAll(e.c, e.p.frame(term), 1)
		e.c.RxEOF(eofErr)
		if e.c.State() == rdma.StateError {
			t.Fatalf("eof %v: ERROR before the Write's octets were reported written", eofErr)
		}
		e.c.TxDone(n)
		if e.c.State() != rdma.StateError {
			e.c.Close()
		}
		comps := poll(e.c)
		if len(comps) == 0 || comps[0].ID != 1 || comps[0].Status != rdma.StatusSuccess {
			t.Fatalf("eof %v: completions %+v, want the Write's success first", eofErr, comps)
		}
	}
}
