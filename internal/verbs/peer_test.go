package verbs

import (
	"errors"
	"net"
	"testing"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/testnet"
	"github.com/goiwarp/iwarp/internal/wire"
)

// peer is a scripted other end: it writes the FPDUs a test composes and
// reads what the QP sends, with the fpdu package's blocking Reader and
// Writer (not the shell under test). It reads nothing unless asked, so it
// can play a peer that stops reading.
type peer struct {
	t   testing.TB
	nc  net.Conn
	fc  *fpdu.Conn
	msn [4]uint32 // next MSN to send per QN
}

// scripted starts an end over loopback TCP and returns it with a
// scripted peer on the other side (CRC on, RDMAP version 1).
func scripted(t testing.TB, o opts) (*end, *peer) {
	t.Helper()
	e := newEnd(t, o)
	ca, cb := testnet.TCPPair(t)
	e.start(t, ca, o)
	return e, newPeer(t, cb)
}

// scriptedPipe is scripted over an in-memory connection (pipePair), for
// tests in a testing/synctest bubble.
func scriptedPipe(t testing.TB, o opts) (*end, *peer) {
	t.Helper()
	e := newEnd(t, o)
	ca, cb := pipePair()
	t.Cleanup(func() { cb.Close() })
	e.start(t, ca, o)
	return e, newPeer(t, cb)
}

// newPeer returns a scripted peer over nc (CRC on, RDMAP version 1).
func newPeer(t testing.TB, nc net.Conn) *peer {
	return &peer{t: t, nc: nc, fc: fpdu.NewConn(nc, fpdu.Options{CRC: true}), msn: [4]uint32{1, 1, 1, 1}}
}

// send writes one FPDU carrying ulpdu.
func (p *peer) send(ulpdu []byte) {
	p.t.Helper()
	if err := p.fc.Writer().WriteFPDU(ulpdu); err != nil {
		p.t.Fatalf("peer: sending: %v", err)
	}
}

// untagged returns the ULPDU of a one-segment untagged message on qn with
// the next MSN of that queue.
func (p *peer) untagged(op wire.Opcode, qn uint32, inv uint32, rdmaHdr, payload []byte) []byte {
	h := wire.DDPHeader{Last: true, Version: wire.DDPVersion, Control: wire.MakeRDMAPControl(wire.RDMAPVersion1, op),
		InvSTag: inv, QN: qn, MSN: p.msn[qn]}
	p.msn[qn]++
	b := wire.AppendDDPHeader(nil, &h)
	b = append(b, rdmaHdr...)
	return append(b, payload...)
}

// tagged returns the ULPDU of a last tagged segment.
func tagged(op wire.Opcode, stag uint32, to uint64, payload []byte) []byte {
	h := wire.DDPHeader{Tagged: true, Last: true, Version: wire.DDPVersion, Control: wire.MakeRDMAPControl(wire.RDMAPVersion1, op),
		STag: stag, TO: to}
	return append(wire.AppendDDPHeader(nil, &h), payload...)
}

// sendMsg sends a Send (op) with payload.
func (p *peer) sendMsg(op wire.Opcode, inv uint32, payload []byte) {
	p.send(p.untagged(op, wire.QNSend, inv, nil, payload))
}

// readRequest sends an RDMA Read Request.
func (p *peer) readRequest(rr wire.ReadRequest) {
	p.send(p.untagged(wire.OpReadRequest, wire.QNReadReq, 0, wire.AppendReadRequest(nil, &rr), nil))
}

// next reads the next ULPDU the QP sent.
func (p *peer) next() (wire.ULPDU, error) {
	r := p.fc.Reader()
	n, err := r.Next()
	if err != nil {
		return wire.ULPDU{}, err
	}
	b := make([]byte, n)
	if err := r.Read(b); err != nil {
		return wire.ULPDU{}, err
	}
	if err := r.End(); err != nil {
		return wire.ULPDU{}, err
	}
	return wire.ParseULPDU(b)
}

// nextOf reads until the QP sends a message with opcode op; a Terminate
// or the end of the stream first fails the test.
func (p *peer) nextOf(op wire.Opcode) wire.ULPDU {
	p.t.Helper()
	for {
		u, err := p.next()
		if err != nil {
			p.t.Fatalf("peer: waiting for %v: %v", op, err)
		}
		if u.Opcode == op {
			return u
		}
		if u.Opcode == wire.OpTerminate {
			p.t.Fatalf("peer: Terminate %v while waiting for %v", u.Terminate, op)
		}
	}
}

// drainAll reads and discards until the stream ends; it returns the
// opcodes of the messages' last segments.
func (p *peer) drainAll() ([]wire.Opcode, error) {
	var ops []wire.Opcode
	for {
		u, err := p.next()
		if err != nil {
			if errors.Is(err, fpdu.ErrTruncated) {
				return ops, err
			}
			return ops, nil
		}
		if u.DDP.Last {
			ops = append(ops, u.Opcode)
		}
	}
}
