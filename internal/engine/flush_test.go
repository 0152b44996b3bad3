package engine

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// The close/flush matrix: an operation at some phase × a fault of the peer.
// Whatever happens, every posted WR completes exactly once, in posting
// order, and no WR whose data was not fully placed completes successfully.

type phase string

const (
	phQueued       phase = "queued"        // behind a Write the peer does not read
	phPartlySent   phase = "partly-sent"   // a large Write the peer read part of
	phAwaitingResp phase = "awaiting-resp" // a Read whose request the peer read
	phPartResp     phase = "partial-resp"  // a Read with part of its response placed
)

type fault string

const (
	fFIN       fault = "FIN"
	fRST       fault = "RST"
	fStall     fault = "stall"
	fTerminate fault = "Terminate"
)

func TestCloseFlushMatrix(t *testing.T) {
	ops := []Op{OpSend, OpWrite, OpRead}
	phases := []phase{phQueued, phPartlySent, phAwaitingResp, phPartResp}
	faults := []fault{fFIN, fRST, fStall, fTerminate}
	for _, op := range ops {
		for _, ph := range phases {
			if (ph == phAwaitingResp || ph == phPartResp) && op != OpRead {
				continue
			}
			if ph == phPartlySent && op == OpRead {
				continue
			}
			for _, f := range faults {
				t.Run(fmt.Sprintf("%v/%s/%s", op, ph, f), func(t *testing.T) {
					runFlushCase(t, op, ph, f, rand.New(rand.NewPCG(uint64(len(t.Name())), 1)))
				})
			}
		}
	}
}

// TestCloseFlushRandom runs random cases of the matrix.
func TestCloseFlushRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	n := 12
	if testing.Short() {
		n = 4
	}
	for i := 0; i < n; i++ {
		op := []Op{OpSend, OpWrite, OpRead}[rng.IntN(3)]
		ph := phQueued
		switch {
		case op == OpRead && rng.IntN(2) == 0:
			ph = []phase{phAwaitingResp, phPartResp}[rng.IntN(2)]
		case op != OpRead && rng.IntN(2) == 0:
			ph = phPartlySent
		}
		f := []fault{fFIN, fRST, fStall, fTerminate}[rng.IntN(4)]
		t.Run(fmt.Sprintf("%d/%v/%s/%s", i, op, ph, f), func(t *testing.T) { runFlushCase(t, op, ph, f, rng) })
	}
}

func runFlushCase(t *testing.T, op Op, ph phase, f fault, rng *rand.Rand) {
	o := pairOpts{crc: true, ird: 4, ord: 4, depth: 32}
	ca, cb := tcpPair(t)
	a := newSide(t, o, ca)
	a.qp.cfg.OpTimeout = 300 * time.Millisecond
	a.qp.cfg.DrainTimeout = 300 * time.Millisecond
	a.start(t, o)
	defer a.qp.Close()
	defer cb.Close()
	peer := &rawPeer{nc: cb, fc: fpdu.NewConn(cb, fpdu.Options{CRC: true})}

	const big = 32 << 20
	bigSrc, _, _ := a.register(t, big, 0)
	buf, _, all := a.register(t, 4096, mem.AccessLocalWrite)
	var wrs []SendWR
	id := uint64(100)
	add := func(wr SendWR) {
		id++
		wr.ID = id
		wr.Flags |= Signaled
		wrs = append(wrs, wr)
	}
	switch ph {
	case phQueued, phPartlySent:
		// A big Write first: it fills the socket buffers; the op under
		// test queues behind it (or is itself the big one).
		if ph == phQueued || op != OpWrite {
			add(SendWR{Op: OpWrite, SGL: []SGE{{Region: bigSrc, Len: big}}, RemoteSTag: 9})
		}
		switch op {
		case OpRead:
			add(SendWR{Op: OpRead, SGL: []SGE{{Region: buf, Len: 4096}}, RemoteSTag: 9})
		case OpSend:
			add(SendWR{Op: OpSend, SGL: []SGE{{Region: bigSrc, Len: uint32(1 + rng.IntN(big-1))}}})
		case OpWrite:
			add(SendWR{Op: OpWrite, SGL: []SGE{{Region: bigSrc, Len: big}}, RemoteSTag: 9})
		}
	case phAwaitingResp, phPartResp:
		add(SendWR{Op: OpRead, SGL: []SGE{{Region: buf, Len: 4096}}, RemoteSTag: 9, RemoteTO: 0})
		add(SendWR{Op: OpSend, SGL: []SGE{{Region: buf, Len: 16}}})
	}
	if _, err := a.qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}

	// Drive the peer to the phase.
	switch ph {
	case phPartlySent:
		// Read a few FPDUs of the big message, then stop reading.
		for i := 0; i < 3; i++ {
			peer.readULPDU(t)
		}
	case phAwaitingResp, phPartResp:
		rr := peer.readULPDU(t) // the Read Request
		if rr[1]&0x0f != 1 {
			t.Fatalf("expected a Read Request, got % x", rr[:2])
		}
		if ph == phPartResp {
			sinkSTag := be32at(rr, 18)
			sinkTO := be64at(rr, 22)
			seg := cat(tagged(2, false, sinkSTag, sinkTO), make([]byte, 1000))
			peer.send(t, seg)
			time.Sleep(20 * time.Millisecond)
		}
	}

	// The fault.
	switch f {
	case fFIN:
		_ = cb.(*net.TCPConn).CloseWrite()
	case fRST:
		_ = cb.(*net.TCPConn).SetLinger(0)
		_ = cb.Close()
	case fStall:
		// nothing: the operation timeout must notice
	case fTerminate:
		h := untagged(7, true, 0, 2, 1, 0)
		c := wire.TermRDMAPInvalidSTag
		peer.send(t, cat(h, []byte{byte(c.Layer)<<4 | byte(c.Type), c.Code, 0, 0}))
	}
	// Keep draining what the QP sends, as a live peer would, except when
	// stalled or reset.
	if f == fFIN || f == fTerminate {
		go func() {
			var b [64 << 10]byte
			for {
				if _, err := cb.Read(b[:]); err != nil {
					return
				}
			}
		}()
	}

	select {
	case <-a.qp.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("QP not torn down (state %v)", a.qp.State())
	}
	// Every WR completes exactly once, in posting order.
	for i, wr := range wrs {
		c := waitCQE(t, a.scq)
		if c.ID != wr.ID {
			t.Fatalf("completion %d has id %d, want %d (posting order)", i, c.ID, wr.ID)
		}
		if wr.Op == OpRead && c.Status == StatusSuccess {
			t.Fatalf("Read completed successfully without its response")
		}
		if c.Status != StatusSuccess && c.Err == nil {
			t.Fatalf("failed completion without an error: %+v", c)
		}
	}
	var extra [1]CQE
	if a.scq.Poll(extra[:]) != 0 {
		t.Fatalf("extra completion %+v", extra[0])
	}
	checkCanaries(t, all, 4096)
}

func be32at(b []byte, i int) uint32 {
	return uint32(b[i])<<24 | uint32(b[i+1])<<16 | uint32(b[i+2])<<8 | uint32(b[i+3])
}

func be64at(b []byte, i int) uint64 { return uint64(be32at(b, i))<<32 | uint64(be32at(b, i+4)) }
