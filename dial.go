package iwarp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// The short path for the common case: Dial and Listener.Serve make, size
// and own what the verbs layer leaves to the caller (a Device, a PD, the
// CQs), and a memory advertisement in the MPA private data tells the peer
// which registered memory it may use (QP.PeerMemory).

// DialConfig configures Dial. The zero value (or nil) gives the defaults: a
// Device, a PD and CQs of the QP's own, the default QPConfig and
// ConnOptions, no memory advertised.
type DialConfig struct {
	// Device, if set, is the Device the QP's PD is allocated on (unless PD
	// is set). Without Device or PD the QP gets a Device of its own.
	Device *Device
	// PD, if set, is the QP's protection domain; otherwise the PD of the
	// first MR of Memory, or a new PD.
	PD *PD
	// QP is the QP's shape (zero fields: the defaults of QPConfig). A nil
	// SendCQ or RecvCQ is created for the QP, sized for its queue, and owned
	// by it (see Dial); a CQ given here is the caller's, and must have room
	// for the queue's depth (ErrCQCapacity). An SRQ needs PD set to the
	// SRQ's PD.
	QP QPConfig
	// Conn holds the MPA choices (ConnOptions: private data, CRC, markers,
	// Dialer, timeout...).
	Conn ConnOptions
	// Memory, if set, is advertised to the peer in the MPA Request's
	// private data (AdvertiseMemory; at most MaxAdvertisedBuffers MRs, of
	// the QP's PD), so that a server's Handle can find it with
	// QP.PeerMemory. It cannot be combined with Conn.PrivateData.
	Memory []*MR
	// Prepare, if set, runs on the QP before it connects: post there the
	// receives the server's first Sends need (on iWARP a Send that finds
	// no posted receive is fatal to the connection). An error ends Dial
	// with it.
	Prepare func(qp *QP) error
}

// Dial connects to the iWARP server at addr ("host:port", "[::1]:port") over
// TCP and returns a QP in StateRTS, or an error. Its resources are made for
// it: unless cfg says otherwise, a Device, a PD on it, and a send and a
// receive CQ each sized for its queue, by the rule of CQ (a CQ's
// capacity must cover the depths of the queues attached to it: here
// SendQueueDepth and RecvQueueDepth, default 64 each; with an SRQ, the
// largest SRQ depth, Device.Attributes().MaxQueueDepth), so the defaults
// never fail with ErrCQCapacity.
//
// The QP owns what Dial made for it. The CQs are reachable through the QP (SendCQ, RecvCQ)
// and need no closing. A Device made by Dial is the QP's alone: it takes no
// new PDs (AllocPD fails with ErrClosed), and it is released — its poller
// stopped — once the QP is closed, or torn down by the peer or by a
// Terminate. QP.PD().RegisterMemory works as on any PD. End the QP as any
// other, with QP.Disconnect or QP.Close.
//
// If the peer advertised memory when it accepted (Listener.Serve with
// ServeConfig.Memory, or AdvertiseMemory in the private data of
// ConnRequest.Accept), QP.PeerMemory returns it. If ctx ends or the
// connection setup fails, Dial closes what it made and returns the error.
func Dial(ctx context.Context, addr string, cfg *DialConfig) (*QP, error) {
	var c DialConfig
	if cfg != nil {
		c = *cfg
	}
	if len(c.Memory) > 0 {
		if len(c.Conn.PrivateData) > 0 {
			return nil, fmt.Errorf("%w: DialConfig.Memory and Conn.PrivateData are both set", ErrInvalidConfig)
		}
		adv, err := AdvertiseMemory(c.Memory...)
		if err != nil {
			return nil, err
		}
		c.Conn.PrivateData = adv
	}
	pd := c.PD
	if pd == nil && len(c.Memory) > 0 && c.Memory[0] != nil {
		pd = c.Memory[0].PD()
	}
	qp, err := newOwnedQP(c.Device, pd, c.Memory, c.QP)
	if err != nil {
		return nil, err
	}
	if c.Prepare != nil {
		if err := c.Prepare(qp); err != nil {
			qp.Close()
			return nil, err
		}
	}
	if err := qp.Connect(ctx, "tcp", addr, &c.Conn); err != nil {
		qp.Close()
		return nil, err
	}
	return qp, nil
}

// defaultQueueDepth is QPConfig's default SendQueueDepth and
// RecvQueueDepth, which Dial and Serve make explicit to size the CQs.
const defaultQueueDepth = 64

// newOwnedQP makes a QP on pd (or a new PD of dev, or of a Device of its
// own), with CQs of its own where qc has none. A Device it made is closed
// at once: Device.Close refuses new PDs and stops the Device's poller when
// its last QP is closed or torn down, so the Device lives exactly as long
// as the QP. memory's MRs must belong to the QP's PD.
func newOwnedQP(dev *Device, pd *PD, memory []*MR, qc QPConfig) (*QP, error) {
	var own *Device
	switch {
	case pd != nil:
		if dev != nil && pd.Device() != dev {
			return nil, fmt.Errorf("%w: the PD belongs to another Device", ErrInvalidConfig)
		}
	default:
		if dev == nil {
			dev = NewDevice(nil)
			own = dev
		}
		var err error
		if pd, err = dev.AllocPD(); err != nil {
			return nil, err
		}
	}
	fail := func(err error) (*QP, error) {
		if own != nil {
			own.Close()
		}
		return nil, err
	}
	for i, mr := range memory {
		if mr == nil || mr.PD() != pd {
			return fail(fmt.Errorf("%w: memory %d to advertise is not registered in the QP's PD", ErrInvalidConfig, i))
		}
	}
	d := pd.Device()
	if qc.SendQueueDepth == 0 {
		qc.SendQueueDepth = defaultQueueDepth
	}
	if qc.RecvQueueDepth == 0 {
		qc.RecvQueueDepth = defaultQueueDepth
	}
	if qc.SendCQ == nil {
		cq, err := d.NewCQ(cqCapacity(qc.SendQueueDepth), nil)
		if err != nil {
			return fail(err)
		}
		qc.SendCQ = cq
	}
	if qc.RecvCQ == nil {
		depth := qc.RecvQueueDepth
		if qc.SRQ != nil {
			// The SRQ's depth is reserved instead; it is at most the
			// Device's queue depth, and a CQ's memory grows only with the
			// completions that queue up, not with its capacity.
			depth = d.Attributes().MaxQueueDepth
		}
		cq, err := d.NewCQ(cqCapacity(depth), nil)
		if err != nil {
			return fail(err)
		}
		qc.RecvCQ = cq
	}
	qp, err := pd.NewQP(&qc)
	if err != nil {
		return fail(err)
	}
	if own != nil {
		own.Close() // released with the QP (see Dial)
	}
	return qp, nil
}

// cqCapacity is the capacity of a CQ for one queue of the given depth; a
// depth out of range is left to NewQP to report.
func cqCapacity(depth int) int { return min(max(depth, 1), 1<<20) }

// The memory advertisement (see AdvertiseMemory).
const (
	advMagic0, advMagic1 = 0x69, 0xA7
	advVersion           = 1
	advHeaderLen         = 4
)

// MaxAdvertisedBuffers is the most buffers one memory advertisement holds.
const MaxAdvertisedBuffers = 15

// Errors of memory advertisements.
var (
	// ErrNoPeerMemory: the peer advertised no memory: its private data is
	// empty, or is not a memory advertisement (it does not start with the
	// advertisement's magic), or advertises zero buffers.
	ErrNoPeerMemory = errors.New("iwarp: the peer advertised no memory")
	// ErrInvalidAdvertisement: the private data starts with the memory
	// advertisement's magic but is not a valid advertisement (truncated,
	// an unknown version, more than MaxAdvertisedBuffers buffers, or a
	// length that does not match its count).
	ErrInvalidAdvertisement = errors.New("iwarp: invalid memory advertisement")
)

// AdvertiseMemory returns the memory advertisement of the MRs' whole
// regions (MR.Remote), for ConnOptions.PrivateData: what Listener.Serve
// sends in its MPA Replies (ServeConfig.Memory) and Dial in its MPA Request
// (DialConfig.Memory), and QP.PeerMemory decodes on the other side; on the
// long path, pass it to ConnRequest.Accept or QP.Connect yourself. With no
// MR it returns nil (no private data). The MRs need the remote access
// rights the peer will use.
//
// The advertisement is a 4-byte header, then the buffers:
//
//	bytes 0-1  magic 0x69 0xA7 ("i", then a byte no UTF-8 text has there)
//	byte 2     version, 1
//	byte 3     count n, 1 to MaxAdvertisedBuffers (15)
//	bytes 4-   n × 16 bytes: each RemoteBuffer's MarshalBinary encoding
//	           (TO 8 bytes, STag 4, Len 4, big-endian)
//
// and nothing after them: 4 + 16n bytes, at most 244, within the 256 bytes
// of private data that Linux siw and Chelsio accept.
func AdvertiseMemory(mrs ...*MR) ([]byte, error) {
	bufs := make([]RemoteBuffer, len(mrs))
	for i, mr := range mrs {
		if mr == nil {
			return nil, fmt.Errorf("%w: memory %d to advertise is nil", ErrInvalidConfig, i)
		}
		bufs[i] = mr.Remote()
	}
	return AdvertiseBuffers(bufs...)
}

// AdvertiseBuffers is AdvertiseMemory for RemoteBuffers (parts of
// regions, MR.RemoteSlice).
func AdvertiseBuffers(bufs ...RemoteBuffer) ([]byte, error) {
	if len(bufs) == 0 {
		return nil, nil
	}
	if len(bufs) > MaxAdvertisedBuffers {
		return nil, fmt.Errorf("%w: %d buffers to advertise, at most %d", ErrInvalidConfig, len(bufs), MaxAdvertisedBuffers)
	}
	p := make([]byte, 0, advHeaderLen+len(bufs)*RemoteBufferLen)
	p = append(p, advMagic0, advMagic1, advVersion, byte(len(bufs)))
	for _, b := range bufs {
		p, _ = b.AppendBinary(p)
	}
	return p, nil
}

// ParseAdvertisement decodes a memory advertisement (the private data of
// the peer's MPA Request or Reply: ConnRequest.PrivateData,
// QPAttributes.PeerPrivateData). It fails with ErrNoPeerMemory if p is
// not an advertisement or advertises nothing, and with
// ErrInvalidAdvertisement if it is a malformed one.
func ParseAdvertisement(p []byte) ([]RemoteBuffer, error) {
	if len(p) < 2 || p[0] != advMagic0 || p[1] != advMagic1 {
		return nil, ErrNoPeerMemory
	}
	if len(p) < advHeaderLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than its header", ErrInvalidAdvertisement, len(p))
	}
	if p[2] != advVersion {
		return nil, fmt.Errorf("%w: version %d", ErrInvalidAdvertisement, p[2])
	}
	n := int(p[3])
	if n > MaxAdvertisedBuffers {
		return nil, fmt.Errorf("%w: %d buffers, at most %d", ErrInvalidAdvertisement, n, MaxAdvertisedBuffers)
	}
	if want := advHeaderLen + n*RemoteBufferLen; len(p) != want {
		return nil, fmt.Errorf("%w: %d bytes for %d buffers, want %d", ErrInvalidAdvertisement, len(p), n, want)
	}
	if n == 0 {
		return nil, ErrNoPeerMemory
	}
	bufs := make([]RemoteBuffer, n)
	for i := range bufs {
		off := advHeaderLen + i*RemoteBufferLen
		bufs[i] = RemoteBuffer{
			TO:   binary.BigEndian.Uint64(p[off:]),
			STag: binary.BigEndian.Uint32(p[off+8:]),
			Len:  binary.BigEndian.Uint32(p[off+12:]),
		}
	}
	return bufs, nil
}

// PeerMemory returns the registered memory the peer advertised when it
// accepted the connection (or connected): the memory advertisement in the
// private data of its MPA Reply (or Request), as Listener.Serve with
// ServeConfig.Memory and Dial with DialConfig.Memory send it (see
// AdvertiseMemory and ParseAdvertisement). It fails with ErrNoPeerMemory if
// the peer advertised none (or the QP is not connected), and with
// ErrInvalidAdvertisement if the advertisement is malformed.
func (qp *QP) PeerMemory() ([]RemoteBuffer, error) {
	return ParseAdvertisement(qp.Attributes().PeerPrivateData)
}
