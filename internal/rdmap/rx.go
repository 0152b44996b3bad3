package rdmap

import (
	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
	"github.com/goiwarp/iwarp/rdma"
)

// Receive path: RxBuf hands out where the next received octets go (the
// Decoder's staging, or registered memory under a transient pin held
// until RxDone); RxDone lets the Decoder consume them and handles every
// FPDU that became ready: its headers are validated (every check of
// docs/spec, in siw's order) as soon as they are staged, its payload is
// placed straight into the destination, and only after its CRC was
// checked is anything completed or executed.

// sinkKind says whose memory the current FPDU's payload goes to, which
// decides what a region found invalid during the placement means.
type sinkKind uint8

const (
	sinkNone   sinkKind = iota
	sinkRemote          // a tagged Write's target: Terminate, as for an invalid STag
	sinkORQ             // this side's oldest Read or Read V2: the WR fails, the QP goes to ERROR
	sinkRecv            // the receive in use: the same
)

// recvInUse is a receive taken for a message being received.
type recvInUse struct {
	wr   PostedRecv
	gens []mem.Gen
	slot uint64
}

type rxState struct {
	d   *fpdu.Decoder
	msn [4]uint32 // next MSN expected per QN

	// The current FPDU: its DDP header and ULPDU length, what to do once
	// its CRC was checked, and where its payload goes.
	h     wire.DDPHeader
	hraw  []byte // h's octets as received (the backing array is reused)
	n     int
	after afterAction
	sink  sinkKind
	// The payload's destination in registered memory (Place, or PlaceV
	// over several SGEs): dsts[i] is bytes of dregs[i] at generation
	// dgens[i], written under a transient pin only. The backing arrays
	// are reused.
	dsts  [][]byte
	dregs []*mem.Region
	dgens []mem.Gen
	// pins are the regions pinned for the buffer RxBuf handed out, until
	// RxDone (the backing array is reused).
	pins []pinRef

	// heard: the first FPDU's header has arrived (the MPA Responder sends
	// nothing before it, RFC 5044 §7.1.2, with
	// Framing.HoldSendUntilReceive).
	heard bool
	out   bool // RxBuf handed out a buffer: RxDone not yet called
	ended bool // RxEOF was called
	// eofPending: the peer's close arrived while TxBufs' octets were out;
	// TxDone acts on it.
	eofPending bool
	eofErr     error  // the error RxEOF gave with eofPending
	dead       bool   // the Decoder is abandoned (Terminate, ERROR): input is discarded
	discard    []byte // where discarded input goes

	// The untagged message being received on QN 0.
	sendActive bool
	sendMSN    uint32
	sendOp     wire.Opcode
	sendPlaced uint64
	send       recvInUse

	// Immediate Data (RFC 7306) between its header and its CRC check.
	immActive bool
	immOp     wire.Opcode
	immRecv   recvInUse
	imm       uint64

	irqNew     irqEntry // a request accepted, queued once its CRC checked
	atomicOrig uint64   // an Atomic Response's value

	// A Send with Invalidate's STag, checked, to invalidate on completion.
	invRegion *mem.Region
	invSTag   uint32
}

type afterAction uint8

const (
	afterNothing     afterAction = iota
	afterRecvDone                // a Send's last segment: complete the receive
	afterReadDone                // a Read Response's last segment: complete the Read
	afterQueueRead               // a Read or Read V2 Request: queue its response
	afterAtomic                  // an Atomic Request: queue it, run it when its turn comes
	afterAtomicDone              // an Atomic Response: complete the atomic
	afterImmediate               // Immediate Data: complete the receive
	afterSendImmDone             // V2 Send with Immediate: complete the receive
	afterReadV2Done              // V2 Read V2 Response: complete the Read V2
)

func (rx *rxState) init(cfg Config, p Params) {
	rx.d = fpdu.NewDecoder(cfg.Framing, cfg.RxOff)
	rx.msn = [4]uint32{p.FirstPeerSendMSN, p.FirstPeerReadMSN, 1, 1}
	rx.dsts = make([][]byte, 0, cfg.MaxSGE)
	rx.pins = make([]pinRef, 0, cfg.MaxSGE)
	rx.dregs = make([]*mem.Region, 0, cfg.MaxSGE)
	rx.dgens = make([]mem.Gen, 0, cfg.MaxSGE)
}

// abandon stops decoding: from now on input is discarded (or refused).
func (rx *rxState) abandon() {
	rx.dead = true
	rx.clearDst()
}

// clearDst forgets the current FPDU's destination.
func (rx *rxState) clearDst() {
	clear(rx.dsts)
	clear(rx.dregs)
	rx.dsts, rx.dregs, rx.dgens = rx.dsts[:0], rx.dregs[:0], rx.dgens[:0]
}

// discardSize is the buffer RxBuf hands out while input is drained.
const discardSize = 4 << 10

// RxBuf returns where the next received octets go: a slice of the
// Decoder's staging buffer, or of registered memory, pinned until RxDone.
// It returns nil when no input is wanted (ERROR, after RxEOF, or after the
// peer's Terminate). While a Terminate is being sent, input is drained: the
// buffer is scratch. The caller reads into it, then calls RxDone with the
// octets read (even 0, even after a failed read) before calling RxBuf
// again.
func (c *Core) RxBuf() []byte {
	rx := &c.rx
	switch {
	case rx.ended || c.state == rdma.StateError:
		return nil
	case rx.dead:
		if !c.termWanted {
			return nil
		}
		if rx.discard == nil {
			rx.discard = make([]byte, discardSize)
		}
		rx.out = true
		return rx.discard
	}
	if rx.d.Step() != fpdu.NeedBytes {
		c.process()
		return c.RxBuf()
	}
	b := rx.d.Buf()
	if !c.pinForRead(b) {
		c.lostPlacement()
		return c.RxBuf()
	}
	rx.out = true
	return b
}

// MaxRxIOV is the most slices RxBufs appends: readv(2)'s IOV_MAX on Linux
// (a scatter list of more SGEs is read in several reads).
const MaxRxIOV = 1024

// RxBufs is RxBuf for a vectored read (readv): it appends to iov where the
// next received octets go, in stream order. While a large payload is being
// placed that is the rest of its destination (pinned until RxDone), then
// the staging buffer for the FPDU's trailer and the next FPDU's first
// octets, so that one read brings both (at most MaxRxIOV slices);
// otherwise the one slice RxBuf would return. It appends nothing when RxBuf would return nil. RxDone
// then takes the octets written across the slices, in order.
func (c *Core) RxBufs(iov [][]byte) [][]byte {
	rx := &c.rx
	if rx.ended || c.state == rdma.StateError || rx.dead {
		if b := c.RxBuf(); b != nil {
			iov = append(iov, b)
		}
		return iov
	}
	for rx.d.Step() != fpdu.NeedBytes {
		c.process()
		if rx.ended || c.state == rdma.StateError || rx.dead {
			return c.RxBufs(iov)
		}
	}
	n := len(iov)
	iov = rx.d.Bufs(iov)
	if len(iov)-n > MaxRxIOV {
		iov = iov[:n+MaxRxIOV] // the rest goes in the next read
	}
	if len(iov) == n+1 {
		// One slice: a staging buffer, or a destination piece with
		// nothing after it. RxBuf's pins apply.
		if !c.pinForRead(iov[n]) {
			c.lostPlacement()
			return c.RxBufs(iov[:n])
		}
		rx.out = true
		return iov
	}
	// A destination and what follows it: every piece of the destination
	// is pinned, since the staging part may hold payload that a marker
	// cut off, which is copied into place when RxDone reports it.
	for i := range rx.dsts {
		if !rx.pin(i) {
			c.lostPlacement()
			return c.RxBufs(iov[:n])
		}
	}
	rx.out = true
	return iov
}

// RxDone reports that n octets were written into the buffer the last
// RxBuf returned (0 <= n <= its length) and handles what they complete.
func (c *Core) RxDone(n int) {
	rx := &c.rx
	if !rx.out {
		return
	}
	rx.out = false
	if n > 0 {
		c.progress++
	}
	if !rx.dead {
		rx.d.Advance(n)
	}
	rx.unpin() // after Advance: the CRC covers the octets as placed
	c.process()
}

// RxEOF reports that the received stream ended: err nil for the peer's
// FIN, else the connection's error. Inside an FPDU the end is a
// truncation (Terminate LLP/0/0x01, as the Reader reports it); between
// FPDUs it is the peer's close: ErrDisconnected after Disconnect, else
// ErrPeerDisconnected. A connection error fails the QP without a
// Terminate. After a Terminate this side sent, it ends the drain; a
// Terminate that cannot be sent any more (held back by
// Framing.HoldSendUntilReceive, or decided after the half-close) is
// given up and the QP goes to ERROR.
func (c *Core) RxEOF(err error) {
	rx := &c.rx
	if rx.out {
		c.RxDone(0)
	}
	if rx.ended {
		return
	}
	rx.ended = true
	if c.tx.out && (err == nil && !rx.d.Mid() && (c.state == rdma.StateRTS || c.state == rdma.StateClosing) || c.terminatedByPeer()) {
		// The peer's close (or, after its Terminate, its close or reset)
		// may answer octets the socket accepted and TxDone has not
		// reported yet: the work requests they finish complete first (a
		// Send or Write completes when handed to TCP).
		rx.eofPending, rx.eofErr = true, err
		return
	}
	c.rxEnded(err)
}

// rxEnded acts on the end of the received stream (RxEOF).
func (c *Core) rxEnded(err error) {
	rx := &c.rx
	switch {
	case c.state == rdma.StateError:
	case c.state == rdma.StateTerminate:
		// The drain ends, and so does a Terminate that cannot go any
		// more: held until the peer's first FPDU (which will never come),
		// or decided after this side's half-close.
		if !c.termWanted || c.termWritten || c.holding() {
			c.toError(c.err)
		}
	case err != nil:
		c.toError(&ConnectionError{Err: err})
	case rx.d.Mid():
		c.streamError(fpdu.ErrTruncated)
	case c.state == rdma.StateClosing:
		c.toError(ErrDisconnected)
	default:
		c.toError(ErrPeerDisconnected)
	}
}

// process handles the FPDUs the Decoder has ready, until it needs octets
// or the QP stops decoding.
func (c *Core) process() {
	rx := &c.rx
	for !rx.dead {
		switch rx.d.Step() {
		case fpdu.NeedBytes:
			return
		case fpdu.NeedPlace:
			if c.onPlace(); rx.dead {
				c.countReceived() // refused: received all the same
			}
		case fpdu.FPDUDone:
			c.onDone()
		}
	}
}

// countReceived counts the FPDU being decoded as received: when it is
// done, or when it is refused (a violation in its headers, a bad CRC),
// so that the peer's FPDUsSent and this side's FPDUsReceived agree.
func (c *Core) countReceived() {
	c.stats.FPDUsReceived++
	c.stats.BytesReceived += uint64(c.rx.d.ULPDULen())
}

// onDone handles the end of an FPDU: a bad CRC or framing fails the
// stream; otherwise what the FPDU completes is done now.
func (c *Core) onDone() {
	rx := &c.rx
	c.countReceived()
	if err := rx.d.Err(); err != nil {
		c.streamError(err)
		return
	}
	after := rx.after
	rx.after, rx.sink = afterNothing, sinkNone
	rx.clearDst()
	rx.d.Next()
	switch after {
	case afterRecvDone:
		c.completeRecv(false)
	case afterSendImmDone:
		c.completeRecv(true)
	case afterReadDone:
		c.completeRead()
	case afterReadV2Done:
		rx.msn[wire.QNResponse]++
		c.completeRead()
	case afterQueueRead, afterAtomic:
		c.irq.push(rx.irqNew)
		rx.irqNew = irqEntry{}
		if after == afterAtomic {
			c.atomicsIn++
			c.runAtomics()
		}
	case afterAtomicDone:
		c.completeAtomic()
	case afterImmediate:
		c.completeImmediate()
	}
}

// lostPlacement handles a destination found invalid while the current
// FPDU's payload was being placed: a Write's target is refused as an
// invalid STag would be (Terminate DDP/1/0x00, docs/semantics.md rule 6);
// a local WR's buffer fails that WR with rdma.StatusLocalProtection and moves
// the QP to ERROR.
func (c *Core) lostPlacement() {
	rx := &c.rx
	switch rx.sink {
	case sinkRemote:
		c.terminate(c.termDDP(ErrTargetInvalidated))
	case sinkORQ:
		c.failWR(c.entry(*c.orq.at(0)))
	default:
		c.failRecv()
	}
	rx.abandon()
}

// failRecv completes the receive in use with a local protection error and
// moves the QP to ERROR.
func (c *Core) failRecv() {
	rx := &c.rx
	r := &rx.send
	if rx.immActive {
		r = &rx.immRecv
	}
	if rx.sendActive || rx.immActive {
		c.pushRecv(Completion{Queue: RecvQueue, Slot: r.slot, Completion: rdma.Completion{ID: r.wr.ID, Op: rdma.OpRecv,
			Status: rdma.StatusLocalProtection, Err: ErrLocalProtection}}, nil)
		rx.sendActive, rx.immActive = false, false
	}
	c.toError(ErrLocalProtection)
}
