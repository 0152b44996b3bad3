package iwarp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goiwarp/iwarp/internal/mpa"
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
	// (default: 10 s when connecting, 5 s when accepting).
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
		c.OfferRTR, c.AcceptRTR = mpa.RTR(o.RTR), mpa.RTR(o.RTR)
	}
	if o.NoP2P {
		c.P2P = false
		c.AcceptRTR = 0
	}
	c.IRD, c.ORD = uint16(qp.cfg.IRD), uint16(qp.cfg.ORD)
	c.Extensions = mpa.ExtRFC7306 | mpa.ExtV2
	if o.Extensions != 0 {
		c.Extensions = mpa.Ext(o.Extensions)
	}
	c.NoAdvertise = o.NoExtensions
	if o.PeerExtensions != 0 {
		c.DeclarePeerExtensions, c.PeerExtensions = true, mpa.Ext(o.PeerExtensions)
	}
	c.PrivateData = o.PrivateData
	c.Timeout = o.Timeout
	c.MaxPrivateData = o.MaxPrivateData
	c.NoResponderHold = o.ResponderSendsFirst
	return c
}

// RTR is a set of RFC 6581 ready-to-receive message types: the first FPDU
// an Initiator sends in peer-to-peer mode, after which the Responder may
// send.
type RTR uint8

// The RTR types (RFC 6581 §5).
const (
	// RTRWrite is a zero-length RDMA Write (to STag 1, TO 0, as siw sends).
	RTRWrite RTR = RTR(mpa.RTRWrite)
	// RTRRead is a zero-length RDMA Read Request (sink STag 0, source
	// STag 1), answered with a zero-length Read Response; it needs one
	// IRD/ORD credit, reserved for it if the QP asked for 0.
	RTRRead RTR = RTR(mpa.RTRRead)
	// RTRSend is a zero-length Send; it consumes a receive at the Responder
	// (hidden from the application).
	RTRSend RTR = RTR(mpa.RTRSend)
)

// Extensions is a set of RDMAP extensions (docs/spec/extensions.md).
type Extensions uint8

// The RDMAP extensions.
const (
	// ExtRFC7306 is RFC 7306: atomics (FetchAdd, CompareSwap, with masks),
	// Immediate Data and Write with Immediate.
	ExtRFC7306 Extensions = Extensions(mpa.ExtRFC7306)
	// ExtV2 is the RDMAP Extensions V2 draft: RDMAP version 2 on every
	// message, Send with Immediate, RDMA Read V2. It implies RFC 7306.
	ExtV2 Extensions = Extensions(mpa.ExtV2)
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
		return &TerminateError{Code: termCode(st.Code), Sent: true, Cause: st.Cause}
	}
	var pt *mpa.PeerTerminateError
	if errors.As(err, &pt) {
		return &TerminateError{Code: termCode(pt.Code), Control: pt.Control, SiwLayout: pt.SiwLayout}
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
	if qp.State() != StateIdle {
		nc.Close()
		return fmt.Errorf("%w: QP is %v", ErrInvalidConfig, qp.State())
	}
	tuneConn(nc)
	c, err := mpa.Connect(ctx, nc, opts.mpaConfig(qp))
	if err != nil {
		nc.Close()
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

// ListenConfig configures a Listener. The zero value gives the defaults.
type ListenConfig struct {
	// StartupTimeout bounds how long a new connection may take to send its
	// MPA Request (default 5 s).
	StartupTimeout time.Duration
	// MaxPrivateData bounds the Request's private data (default 512).
	MaxPrivateData int
	// MaxPending bounds the connection requests read but not yet taken by
	// Accept, and the startups in progress (default 64 each).
	MaxPending int
	// MaxConnections bounds the connections accepted through this
	// Listener that are still open (their QP not yet torn down); a new
	// TCP connection beyond it is closed before its MPA startup (default
	// DefaultMaxConnections; negative: no bound).
	MaxConnections int
}

// DefaultMaxConnections is ListenConfig.MaxConnections' default.
const DefaultMaxConnections = 4096

// Listener accepts iWARP connections: it reads each new connection's MPA
// Request in the background and hands complete requests to Accept.
type Listener struct {
	ln   net.Listener
	cfg  ListenConfig
	reqs chan *ConnRequest
	sem  chan struct{}
	open atomic.Int64 // accepted connections whose QP is not torn down yet

	closeOnce sync.Once
	done      chan struct{}
	wg        sync.WaitGroup
}

// Listen listens on addr for iWARP connections.
func Listen(network, addr string, cfg *ListenConfig) (*Listener, error) {
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, err
	}
	return NewListener(ln, cfg), nil
}

// NewListener accepts iWARP connections from a net.Listener the caller
// made (TLS, a network namespace...). The Listener owns ln.
func NewListener(ln net.Listener, cfg *ListenConfig) *Listener {
	l := &Listener{ln: ln, done: make(chan struct{})}
	if cfg != nil {
		l.cfg = *cfg
	}
	if l.cfg.MaxPending <= 0 {
		l.cfg.MaxPending = 64
	}
	if l.cfg.MaxConnections == 0 {
		l.cfg.MaxConnections = DefaultMaxConnections
	}
	l.reqs = make(chan *ConnRequest, l.cfg.MaxPending)
	l.sem = make(chan struct{}, l.cfg.MaxPending)
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

// Addr returns the listening address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	for {
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return
		}
		nc, err := l.ln.Accept()
		if err != nil {
			<-l.sem
			select {
			case <-l.done:
				return
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			time.Sleep(10 * time.Millisecond) // e.g. EMFILE: back off
			continue
		}
		l.wg.Add(1)
		go l.startup(nc)
	}
}

func (l *Listener) startup(nc net.Conn) {
	defer l.wg.Done()
	defer func() { <-l.sem }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if max := l.cfg.MaxConnections; max > 0 && l.open.Load() >= int64(max) {
		nc.Close() // over the connection limit: refused before any MPA byte
		return
	}
	tuneConn(nc)
	req, err := mpa.ReadRequest(ctx, nc, &mpa.Limits{MaxPrivateData: l.cfg.MaxPrivateData, Timeout: l.cfg.StartupTimeout})
	if err != nil {
		nc.Close() // a garbage or stalled startup: mpa.md says close
		return
	}
	cr := &ConnRequest{nc: nc, req: req, l: l}
	select {
	case l.reqs <- cr:
	case <-l.done:
		nc.Close()
	}
}

// Accept waits for the next connection request.
func (l *Listener) Accept(ctx context.Context) (*ConnRequest, error) {
	select {
	case r := <-l.reqs:
		return r, nil
	case <-l.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops listening; requests not yet accepted are closed.
func (l *Listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.ln.Close()
		l.wg.Wait()
		for {
			select {
			case r := <-l.reqs:
				r.nc.Close()
			default:
				return
			}
		}
	})
	return err
}

// ConnRequest is a peer's request to connect, waiting for Accept or Reject.
type ConnRequest struct {
	nc  net.Conn
	req *mpa.Request
	l   *Listener // the Listener that read it, or nil (ReadConnRequest)
}

// ReadConnRequest reads an MPA Request from a connection the caller
// accepted itself, as Responder.
func ReadConnRequest(ctx context.Context, nc net.Conn, cfg *ListenConfig) (*ConnRequest, error) {
	var lim mpa.Limits
	if cfg != nil {
		lim = mpa.Limits{MaxPrivateData: cfg.MaxPrivateData, Timeout: cfg.StartupTimeout}
	}
	tuneConn(nc)
	req, err := mpa.ReadRequest(ctx, nc, &lim)
	if err != nil {
		nc.Close()
		return nil, wrapSetupError(err)
	}
	return &ConnRequest{nc: nc, req: req}, nil
}

// PrivateData returns the private data of the peer's MPA Request.
func (r *ConnRequest) PrivateData() []byte { return r.req.PrivateData() }

// RemoteAddr returns the peer's address.
func (r *ConnRequest) RemoteAddr() net.Addr { return r.nc.RemoteAddr() }

// MPARevision returns the Request's MPA revision.
func (r *ConnRequest) MPARevision() int { return int(r.req.Rev()) }

// IRDORD returns the peer's IRD and ORD (RFC 6581), and false under MPA
// Rev 1, which does not carry them.
func (r *ConnRequest) IRDORD() (ird, ord int, ok bool) {
	b, ok := r.req.IRDORD()
	return int(b.IRD), int(b.ORD), ok
}

// Accept accepts the connection on qp (in StateIdle), answering with opts'
// private data; on success qp is in StateRTS.
func (r *ConnRequest) Accept(ctx context.Context, qp *QP, opts *ConnOptions) error {
	if qp.State() != StateIdle {
		return fmt.Errorf("%w: QP is %v", ErrInvalidConfig, qp.State())
	}
	c, err := r.req.Accept(ctx, opts.mpaConfig(qp))
	if err != nil {
		r.nc.Close()
		return wrapSetupError(err)
	}
	if r.l != nil { // counted until the QP is torn down (Device.qpDone)
		r.l.open.Add(1)
		qp.listener.Store(r.l)
	}
	if err := qp.start(c); err != nil {
		qp.releaseListener()
		c.Close()
		return err
	}
	return nil
}

// Reject refuses the connection with the given private data (the reason),
// then closes it.
func (r *ConnRequest) Reject(privateData []byte) error {
	return r.req.Reject(privateData)
}
