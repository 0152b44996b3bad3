package iwarp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/rdma"
)

// ConnOptions are the MPA connection-setup choices of either side. The zero
// value gives the project's defaults (docs/spec/mpa.md "Project
// decisions"): MPA Rev 2 with the RFC 6581 IRD/ORD exchange, CRC asked for,
// no markers, peer-to-peer mode offering Write and Read RTR, and the RDMAP
// extensions advertised.
type ConnOptions struct {
	// PrivateData goes to the peer with the MPA Request or Reply (at most
	// 512 bytes in all; Linux siw and Chelsio accept at most 256).
	PrivateData []byte
	// NoCRC does not ask for MPA CRCs (they are still used if the peer
	// asks).
	NoCRC bool
	// Markers asks the peer to insert MPA markers into what it sends.
	Markers bool
	// Dialer, if set, makes the connection for Connect (a network
	// namespace, a proxy, TLS...); default net.Dialer.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// MPARevision 1 uses RFC 5044 startup without IRD/ORD negotiation
	// (default 2, RFC 6581).
	MPARevision int
	// NoP2P disables RFC 6581 peer-to-peer mode (and so the RTR message).
	NoP2P bool
	// RTR is the set of ready-to-receive message types offered (when
	// connecting) or accepted (when accepting) in peer-to-peer mode.
	// Zero means the defaults: offer Write and Read, accept all three.
	RTR RTR
	// NoExtensions offers no RDMAP extension in the MPA startup (the
	// project's extension bits, docs/spec/extensions.md §3): RFC 7306
	// operations then fail locally with ErrNotSupportedByPeer unless
	// PeerExtensions declares them.
	NoExtensions bool
	// Extensions is the set of RDMAP extensions offered; zero means all
	// (RFC 7306 and V2). V2 requires RFC 7306.
	Extensions Extensions
	// PeerExtensions, if not zero, is a ULP-level declaration of what the
	// peer supports, overriding the MPA bits (for peers that negotiate in
	// their own protocol, as RFC 7306 suggests, or hardware that does not
	// use the bits). Only extensions this side offers count.
	PeerExtensions Extensions
	// Timeout bounds the connection setup when ctx has no earlier deadline
	// (default: 10 s when connecting, 5 s when accepting). When accepting,
	// the end of the connection's StartupTimeout also bounds it
	// (ListenConfig).
	Timeout time.Duration
	// MaxPrivateData bounds the private data accepted from the peer
	// (default 512).
	MaxPrivateData int
	// SettleDelay (Initiator) is how long Connect waits after the startup
	// before it returns, when the peer is not known to be this stack (it
	// did not agree to the project's extension bits). Linux siw 6.1 hooks
	// its receive path to the connection only after it sent the Reply (and,
	// in peer-to-peer mode, after the RTR): an FPDU that arrives in that
	// window is not processed, and the connection hangs or siw's iw_cm
	// trips a BUG (docs/interop.md). Default 100 ms; negative: no wait.
	SettleDelay time.Duration
	// ResponderSendsFirst (accepting side, without peer-to-peer mode) lets
	// this side send before the Initiator's first FPDU has arrived. RFC 5044
	// §7.1.2 forbids it (the Initiator may not be ready to receive yet;
	// RFC 6581's peer-to-peer mode is the standard answer), so by default
	// the first send waits for the Initiator's first FPDU. Set it only when
	// the application protocol guarantees the Initiator is in full
	// operation — e.g. perftest's ib_write_lat, whose server writes first
	// once both sides have synchronised over another connection, and whose
	// siw peers do not keep the rule.
	ResponderSendsFirst bool
}

func (o *ConnOptions) mpaConfig(qp *QP) *mpa.Config {
	c := mpa.DefaultConfig()
	if o == nil {
		o = &ConnOptions{}
	}
	c.CRC = !o.NoCRC
	c.Markers = o.Markers
	if o.MPARevision == 1 {
		c.Rev = mpa.Rev1
		c.P2P = false
	}
	if o.RTR != 0 {
		c.OfferRTR, c.AcceptRTR = o.RTR, o.RTR
	}
	if o.NoP2P {
		c.P2P = false
		c.AcceptRTR = 0
	}
	c.IRD, c.ORD = uint16(qp.cfg.IRD), uint16(qp.cfg.ORD)
	c.Extensions = mpa.ExtRFC7306 | mpa.ExtV2
	if o.Extensions != 0 {
		c.Extensions = o.Extensions
	}
	c.NoAdvertise = o.NoExtensions
	if o.PeerExtensions != 0 {
		c.DeclarePeerExtensions, c.PeerExtensions = true, o.PeerExtensions
	}
	c.PrivateData = o.PrivateData
	c.Timeout = o.Timeout
	c.MaxPrivateData = o.MaxPrivateData
	c.NoResponderHold = o.ResponderSendsFirst
	return c
}

// RTR is a set of RFC 6581 ready-to-receive message types: the first FPDU
// an Initiator sends in peer-to-peer mode, after which the Responder may
// send (RFC 6581 §5). RTRWrite is a zero-length RDMA Write (to STag 1, TO
// 0, as siw sends); RTRRead a zero-length RDMA Read Request (sink STag 0,
// source STag 1), answered with a zero-length Read Response, which needs
// one IRD/ORD credit, reserved for it if the QP asked for 0; RTRSend a
// zero-length Send, which consumes a receive at the Responder (hidden
// from the application).
type RTR = rdma.RTR

// The RTR types (RFC 6581 §5).
const (
	RTRWrite = rdma.RTRWrite
	RTRRead  = rdma.RTRRead
	RTRSend  = rdma.RTRSend
)

// Extensions is a set of RDMAP extensions (docs/extensions.md): ExtRFC7306
// is RFC 7306 (atomics with masks, Immediate Data, Write with Immediate);
// ExtV2 the RDMAP Extensions V2 draft (RDMAP version 2 on every message,
// Send with Immediate, RDMA Read V2), which implies RFC 7306.
type Extensions = rdma.Extensions

// The RDMAP extensions.
const (
	ExtRFC7306 = rdma.ExtRFC7306
	ExtV2      = rdma.ExtV2
)

// RejectedError reports that the peer rejected the connection; PrivateData
// is its reason, if it gave one.
type RejectedError struct {
	PrivateData []byte
}

// Error describes the rejection.
func (e *RejectedError) Error() string {
	return fmt.Sprintf("iwarp: connection rejected by the peer (private data %q)", e.PrivateData)
}

// wrapSetupError turns the startup's errors into the API's: a rejection
// into *RejectedError, a Terminate either side sent into *TerminateError.
func wrapSetupError(err error) error {
	var re *mpa.RejectError
	if errors.As(err, &re) {
		return &RejectedError{PrivateData: re.PrivateData}
	}
	var st *mpa.SentTerminateError
	if errors.As(err, &st) {
		return &TerminateError{Code: st.Code, Sent: true, Cause: st.Cause}
	}
	var pt *mpa.PeerTerminateError
	if errors.As(err, &pt) {
		return &TerminateError{Code: pt.Code, Control: pt.Control, SiwLayout: pt.SiwLayout}
	}
	return wrapAs(nil, err)
}

// Connect dials addr (network "tcp", "tcp4" or "tcp6") and runs the MPA
// connection setup as Initiator; on success the QP is in StateRTS.
func (qp *QP) Connect(ctx context.Context, network, addr string, opts *ConnOptions) error {
	dial := (&net.Dialer{}).DialContext
	if opts != nil && opts.Dialer != nil {
		dial = opts.Dialer
	}
	nc, err := dial(ctx, network, addr)
	if err != nil {
		return err
	}
	return qp.ConnectConn(ctx, nc, opts)
}

// ConnectConn runs the MPA connection setup as Initiator over a connection
// the caller established (TLS, a network namespace, an in-memory pipe...).
// The QP owns nc from then on, also on failure.
func (qp *QP) ConnectConn(ctx context.Context, nc net.Conn, opts *ConnOptions) error {
	if err := qp.claim(); err != nil {
		nc.Close()
		return err
	}
	tuneConn(nc)
	c, err := mpa.Connect(ctx, nc, opts.mpaConfig(qp))
	if err != nil {
		nc.Close()
		qp.unclaim()
		return wrapSetupError(err)
	}
	if p := c.Params(); p.Extensions == 0 {
		settle := 100 * time.Millisecond
		if opts != nil && opts.SettleDelay != 0 {
			settle = opts.SettleDelay
		}
		if settle > 0 {
			t := time.NewTimer(settle)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				c.Close()
				qp.unclaim()
				return ctx.Err()
			}
		}
	}
	if err := qp.start(c); err != nil {
		c.Close()
		return err
	}
	return nil
}

// tuneConn sets TCP_NODELAY (the stack batches FPDUs itself) and keepalive
// for dead-peer detection.
func tuneConn(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3})
	}
}
