package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// rawPeer speaks the wire format directly to a QP under test.
type rawPeer struct {
	nc net.Conn
	fc *fpdu.Conn
}

func (p *rawPeer) send(t *testing.T, ulpdu []byte) {
	t.Helper()
	if err := p.fc.Writer().WriteFPDU(ulpdu); err != nil {
		t.Fatalf("raw peer send: %v", err)
	}
}

// readULPDU reads the next FPDU the QP sent.
func (p *rawPeer) readULPDU(t *testing.T) []byte {
	t.Helper()
	_ = p.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	r := p.fc.Reader()
	n, err := r.Next()
	if err != nil {
		t.Fatalf("raw peer read: %v", err)
	}
	b := make([]byte, n)
	if err := r.Read(b); err != nil {
		t.Fatal(err)
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
	return b
}

// expectEOF checks the QP half-closed after its Terminate.
func (p *rawPeer) expectEOF(t *testing.T) {
	t.Helper()
	_ = p.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := p.fc.Reader().Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the Terminate: %v, want EOF", err)
	}
}

// Hand-assembled headers, independent of the wire package's encoders.
func tagged(op byte, last bool, stag uint32, to uint64) []byte {
	b := make([]byte, 14)
	b[0] = 0x81
	if last {
		b[0] |= 0x40
	}
	b[1] = 0x40 | op
	binary.BigEndian.PutUint32(b[2:], stag)
	binary.BigEndian.PutUint64(b[6:], to)
	return b
}

func untagged(op byte, last bool, inv, qn, msn, mo uint32) []byte {
	b := make([]byte, 18)
	b[0] = 0x01
	if last {
		b[0] |= 0x40
	}
	b[1] = 0x40 | op
	binary.BigEndian.PutUint32(b[2:], inv)
	binary.BigEndian.PutUint32(b[6:], qn)
	binary.BigEndian.PutUint32(b[10:], msn)
	binary.BigEndian.PutUint32(b[14:], mo)
	return b
}

func readReqHdr(sinkSTag uint32, sinkTO uint64, size, srcSTag uint32, srcTO uint64) []byte {
	b := make([]byte, 28)
	binary.BigEndian.PutUint32(b[0:], sinkSTag)
	binary.BigEndian.PutUint64(b[4:], sinkTO)
	binary.BigEndian.PutUint32(b[12:], size)
	binary.BigEndian.PutUint32(b[16:], srcSTag)
	binary.BigEndian.PutUint64(b[20:], srcTO)
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// wantTerminate is the Terminate ULPDU the spec prescribes: QN 2, MSN 1,
// MO 0, L=1, RV 1 opcode 7, then Layer|Type, Code, the M/D/R bits, and the
// offending segment's length and headers.
func wantTerminate(code wire.TermCode, offending []byte, ddpLen int, rdma bool) []byte {
	b := untagged(0x7, true, 0, 2, 1, 0)
	flags := uint16(0x8000 | 0x4000) // M and D
	if rdma {
		flags |= 0x2000
	}
	ctrl := []byte{byte(code.Layer)<<4 | byte(code.Type), code.Code, byte(flags >> 8), byte(flags)}
	b = append(b, ctrl...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(offending)))
	b = append(b, offending[:ddpLen]...)
	if rdma {
		b = append(b, offending[ddpLen:ddpLen+28]...)
	}
	return b
}

type termCase struct {
	name string
	// build returns the offending ULPDU and its DDP header length, given
	// the QP's registered regions.
	build func(r *termRegions) ([]byte, int)
	code  wire.TermCode
	rdma  bool
}

type termRegions struct {
	write, read, noAccess, otherPD *mem.Region
}

var termCases = []termCase{
	{"Write/invalid-STag/DDP-1-0x00", func(r *termRegions) ([]byte, int) {
		return cat(tagged(0, true, uint32(r.write.STag())^0xff, r.write.Base()), []byte("data")), 14
	}, wire.TermDDPInvalidSTag, false},
	{"Write/other-PD/DDP-1-0x02", func(r *termRegions) ([]byte, int) {
		return cat(tagged(0, true, uint32(r.otherPD.STag()), r.otherPD.Base()), []byte("data")), 14
	}, wire.TermDDPSTagNotAssoc, false},
	{"Write/no-access/DDP-1-0x00", func(r *termRegions) ([]byte, int) {
		return cat(tagged(0, true, uint32(r.noAccess.STag()), r.noAccess.Base()), []byte("data")), 14
	}, wire.TermDDPInvalidSTag, false},
	{"Write/bounds/DDP-1-0x01", func(r *termRegions) ([]byte, int) {
		return cat(tagged(0, true, uint32(r.write.STag()), r.write.Base()+62), []byte("data")), 14
	}, wire.TermDDPBaseBounds, false},
	{"Write/TO-wrap/DDP-1-0x03", func(r *termRegions) ([]byte, int) {
		return cat(tagged(0, true, uint32(r.write.STag()), ^uint64(0)-1), []byte("data")), 14
	}, wire.TermDDPTOWrap, false},
	{"Send/invalid-QN/DDP-2-0x01", func(r *termRegions) ([]byte, int) {
		return cat(untagged(3, true, 0, 5, 1, 0), []byte("x")), 18
	}, wire.TermDDPInvalidQN, false},
	{"Send/MSN-range/DDP-2-0x03", func(r *termRegions) ([]byte, int) {
		return cat(untagged(3, true, 0, 0, 9, 0), []byte("x")), 18
	}, wire.TermDDPMSNRange, false},
	{"Send/MO/DDP-2-0x04", func(r *termRegions) ([]byte, int) {
		return cat(untagged(3, true, 0, 0, 1, 4), []byte("x")), 18
	}, wire.TermDDPInvalidMO, false},
	{"Send/too-long/DDP-2-0x05", func(r *termRegions) ([]byte, int) {
		return cat(untagged(3, true, 0, 0, 1, 0), make([]byte, 65)), 18
	}, wire.TermDDPTooLong, false},
	{"Write/DDP-version/DDP-1-0x04", func(r *termRegions) ([]byte, int) {
		b := cat(tagged(0, true, uint32(r.write.STag()), r.write.Base()), []byte("data"))
		b[0] = b[0]&^3 | 2
		return b, 14
	}, wire.TermDDPTaggedVersion, false},
	{"Send/DDP-version/DDP-2-0x06", func(r *termRegions) ([]byte, int) {
		b := cat(untagged(3, true, 0, 0, 1, 0), []byte("x"))
		b[0] &^= 3 // DV 0
		return b, 18
	}, wire.TermDDPUntaggedVersion, false},
	{"Send/RDMAP-version/RDMAP-2-0x05", func(r *termRegions) ([]byte, int) {
		b := cat(untagged(3, true, 0, 0, 1, 0), []byte("x"))
		b[1] = 0x80 | 3
		return b, 18
	}, wire.TermRDMAPInvalidVersion, false},
	{"opcode-0xC/RDMAP-2-0x06", func(r *termRegions) ([]byte, int) {
		return cat(untagged(0xC, true, 0, 0, 1, 0), []byte("x")), 18
	}, wire.TermRDMAPUnexpectedOpcode, false},
	{"ReadRequest/invalid-STag/RDMAP-1-0x00", func(r *termRegions) ([]byte, int) {
		return cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x100, 0, 8, uint32(r.read.STag())^1, r.read.Base())), 18
	}, wire.TermRDMAPInvalidSTag, true},
	{"ReadRequest/access/RDMAP-1-0x02", func(r *termRegions) ([]byte, int) {
		return cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x100, 0, 8, uint32(r.noAccess.STag()), r.noAccess.Base())), 18
	}, wire.TermRDMAPAccessRights, true},
	{"ReadRequest/bounds/RDMAP-1-0x01", func(r *termRegions) ([]byte, int) {
		return cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x100, 0, 65, uint32(r.read.STag()), r.read.Base())), 18
	}, wire.TermRDMAPBaseBounds, true},
	{"ReadRequest/other-PD/RDMAP-1-0x03", func(r *termRegions) ([]byte, int) {
		return cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x100, 0, 8, uint32(r.otherPD.STag()), r.otherPD.Base())), 18
	}, wire.TermRDMAPSTagNotAssoc, true},
	{"ReadRequest/TO-wrap/RDMAP-1-0x04", func(r *termRegions) ([]byte, int) {
		return cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x100, 0, 8, uint32(r.read.STag()), ^uint64(0)-3)), 18
	}, wire.TermRDMAPTOWrap, true},
	{"ReadRequest/4GiB/RDMAP-1-0x01", func(r *termRegions) ([]byte, int) {
		return cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x100, 0, 0xffffffff, uint32(r.read.STag()), r.read.Base())), 18
	}, wire.TermRDMAPBaseBounds, true},
	{"ReadResponse/unsolicited/RDMAP-2-0x06", func(r *termRegions) ([]byte, int) {
		return cat(tagged(2, true, uint32(r.write.STag()), r.write.Base()), []byte("data")), 14
	}, wire.TermRDMAPUnexpectedOpcode, false},
}

func TestTerminates(t *testing.T) {
	for _, c := range termCases {
		t.Run(c.name, func(t *testing.T) {
			o := pairOpts{crc: true, ird: 1, ord: 1}
			ca, cb := tcpPair(t)
			a := newSide(t, o, ca)
			regs := &termRegions{}
			var alls [][]byte
			reg := func(pd uint32, acc mem.Access) *mem.Region {
				buf := make([]byte, 64+128)
				for i := range buf {
					buf[i] = 0xCA
				}
				r, err := a.table.Register(pd, buf[64:128], acc, 0x2000)
				if err != nil {
					t.Fatal(err)
				}
				alls = append(alls, buf)
				return r
			}
			regs.write = reg(a.pd, mem.AccessRemoteWrite|mem.AccessLocalWrite)
			regs.read = reg(a.pd, mem.AccessRemoteRead)
			regs.noAccess = reg(a.pd, mem.AccessLocalWrite)
			regs.otherPD = reg(a.pd+1, mem.AccessRemoteWrite|mem.AccessRemoteRead)
			// One 64-byte receive posted, and a Write outstanding to flush.
			if _, err := a.qp.PostRecv([]RecvWR{{ID: 5, SGL: []SGE{{Region: regs.write, Len: 64}}}}); err != nil {
				t.Fatal(err)
			}
			a.start(t, o)
			t.Cleanup(func() { _ = a.qp.Close() })
			peer := &rawPeer{nc: cb, fc: fpdu.NewConn(cb, fpdu.Options{CRC: true})}
			defer cb.Close()

			off, ddpLen := c.build(regs)
			peer.send(t, off)
			got := peer.readULPDU(t)
			want := wantTerminate(c.code, off, ddpLen, c.rdma)
			if !bytes.Equal(got, want) {
				t.Fatalf("Terminate bytes\n got % x\nwant % x", got, want)
			}
			peer.expectEOF(t)
			cb.Close()
			<-a.qp.Done()
			var te *TerminateError
			if !errors.As(a.qp.Err(), &te) || !te.Sent || te.Code != c.code {
				t.Fatalf("QP error %v, want a sent Terminate %v", a.qp.Err(), c.code)
			}
			rc := waitCQE(t, a.rcq)
			if rc.Status != StatusFlushed || rc.ID != 5 {
				t.Fatalf("receive not flushed: %+v", rc)
			}
			for _, all := range alls {
				for i := 0; i < 64; i++ {
					if all[i] != 0xCA || all[128+i] != 0xCA {
						t.Fatal("canary overwritten")
					}
				}
			}
		})
	}
}

// TestRTRsNotChecked: zero-length Writes and Reads to unknown STags (the
// RTR shapes of mpa.md) are accepted, not terminated.
func TestRTRsNotChecked(t *testing.T) {
	o := pairOpts{crc: false, ird: 1, ord: 1}
	ca, cb := tcpPair(t)
	a := newSide(t, o, ca)
	a.start(t, o)
	t.Cleanup(func() { _ = a.qp.Close() })
	peer := &rawPeer{nc: cb, fc: fpdu.NewConn(cb, fpdu.Options{})}
	defer cb.Close()
	peer.send(t, tagged(0, true, 1, 0))                                         // Write RTR
	peer.send(t, cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0, 0, 0, 1, 0))) // Read RTR
	got := peer.readULPDU(t)
	if want := tagged(2, true, 0, 0); !bytes.Equal(got, want) {
		t.Fatalf("zero-length Read Response % x, want % x", got, want)
	}
	if a.qp.State() != StateRTS {
		t.Fatalf("state %v: %v", a.qp.State(), a.qp.Err())
	}
}

// TestCRCErrorTerminate: a CRC mismatch is Terminate LLP/0/0x02.
func TestCRCErrorTerminate(t *testing.T) {
	o := pairOpts{crc: true}
	ca, cb := tcpPair(t)
	a := newSide(t, o, ca)
	a.start(t, o)
	t.Cleanup(func() { _ = a.qp.Close() })
	defer cb.Close()
	// A Write RTR FPDU with a wrong CRC.
	u := tagged(0, true, 1, 0)
	f := binary.BigEndian.AppendUint16(nil, uint16(len(u)))
	f = append(f, u...)
	f = append(f, make([]byte, fpdu.PadLen(len(u)))...)
	f = binary.LittleEndian.AppendUint32(f, fpdu.CRC32c(f)^1)
	if _, err := cb.Write(f); err != nil {
		t.Fatal(err)
	}
	peer := &rawPeer{nc: cb, fc: fpdu.NewConn(cb, fpdu.Options{CRC: true})}
	got := peer.readULPDU(t)
	code := wire.TermLLPCRC
	want := cat(untagged(7, true, 0, 2, 1, 0), []byte{byte(code.Layer)<<4 | byte(code.Type), code.Code, 0, 0})
	if !bytes.Equal(got, want) {
		t.Fatalf("Terminate % x, want % x", got, want)
	}
}
