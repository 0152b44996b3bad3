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
// value (or nil) gives the project's defaults (docs/mpa.md): MPA Rev 2
// with the RFC 6581 IRD/ORD exchange, CRC asked for, no markers,
// peer-to-peer mode offering Write and Read RTR, and the RDMAP extensions
// advertised. The choices that exist only to meet other implementations
// are in Interop.
type ConnOptions struct {
	// PrivateData goes to the peer with the MPA Request or Reply (at most
	// 512 bytes in all; Linux siw and Chelsio accept at most 256).
	PrivateData []byte
	// MaxPrivateData bounds the private data accepted from the peer
	// (default 512).
	MaxPrivateData int
	// Dialer, if set, makes the connection for Connect (a network
	// namespace, a proxy, TLS...); default net.Dialer.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds the connection setup when ctx has no earlier deadline
	// (default: 10 s when connecting, 5 s when accepting). When accepting,
	// the end of the connection's StartupTimeout also bounds it
	// (ListenConfig).
	Timeout time.Duration
	// DisableCRC does not ask for MPA CRCs (they are still used if the
	// peer asks: RFC 5044 §7.1).
	DisableCRC bool
	// Extensions is the set of RDMAP extensions offered; zero means all
	// (RFC 7306 and V2). V2 requires RFC 7306.
	Extensions Extensions
	// PeerExtensions, if not zero, is a ULP-level declaration of what the
	// peer supports, overriding the MPA bits (for peers that negotiate in
	// their own protocol, as RFC 7306 suggests, or hardware that does not
	// use the bits). Only extensions this side offers count.
	PeerExtensions Extensions
	// Interop, if set, changes the setup to meet other implementations.
	Interop *InteropOptions
}

// InteropOptions are the connection-setup choices that exist to meet other
// iWARP implementations (Linux siw, hardware RNICs, perftest): the
// defaults suit a peer of this stack and Linux siw alike.
type InteropOptions struct {
	// MPARevision 1 uses RFC 5044 startup without IRD/ORD negotiation
	// (default 2, RFC 6581).
	MPARevision int
	// Markers asks the peer to insert MPA markers into what it sends
	// (RFC 5044 §5).
	Markers bool
	// DisableP2P disables RFC 6581 peer-to-peer mode (and so the RTR
	// message).
	DisableP2P bool
	// RTR is the set of ready-to-receive message types offered (when
	// connecting) or accepted (when accepting) in peer-to-peer mode.
	// Zero means the defaults: offer Write and Read, accept all three.
	RTR RTR
	// HideExtensions does not advertise the project's extension bits in
	// the MPA frames (docs/extensions.md), for peers that refuse reserved
	// bits: RFC 7306 operations then fail locally with
	// ErrNotSupportedByPeer unless ConnOptions.PeerExtensions declares
	// them.
	HideExtensions bool
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
	c.CRC = !o.DisableCRC
	c.IRD, c.ORD = uint16(qp.cfg.IRD), uint16(qp.cfg.ORD)
	c.Extensions = mpa.ExtRFC7306 | mpa.ExtV2
	if o.Extensions != 0 {
		c.Extensions = o.Extensions
	}
	if o.PeerExtensions != 0 {
		c.DeclarePeerExtensions, c.PeerExtensions = true, o.PeerExtensions
	}
	c.PrivateData = o.PrivateData
	c.Timeout = o.Timeout
	c.MaxPrivateData = o.MaxPrivateData
	if i := o.Interop; i != nil {
		c.Markers = i.Markers
		if i.MPARevision == 1 {
			c.Rev = mpa.Rev1
			c.P2P = false
		}
		if i.RTR != 0 {
			c.OfferRTR, c.AcceptRTR = i.RTR, i.RTR
		}
		if i.DisableP2P {
			c.P2P = false
			c.AcceptRTR = 0
		}
		c.NoAdvertise = i.HideExtensions
		c.NoResponderHold = i.ResponderSendsFirst
	}
	return c
}

// settleDelay is how long Connect waits after a startup with a peer not
// known to be this stack (InteropOptions.SettleDelay).
func (o *ConnOptions) settleDelay() time.Duration {
	if o != nil && o.Interop != nil && o.Interop.SettleDelay != 0 {
		return o.Interop.SettleDelay
	}
	return 100 * time.Millisecond
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
		if settle := opts.settleDelay(); settle > 0 {
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
