package conform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/wire"
)

// Options configure a run of the suite.
type Options struct {
	// Dial connects to the responder under test.
	Dial func(ctx context.Context) (net.Conn, error)
	// NoCRC does not ask for MPA CRCs (the responder may still ask).
	NoCRC bool
	// Wait bounds how long the suite waits for each answer (default 3 s).
	Wait time.Duration
	// StartupWait bounds how long a startup case waits for the responder
	// to give up on a stalled startup (default 12 s).
	StartupWait time.Duration
	// Settle is how long to wait after the startup before the first FPDU
	// when the responder is not this stack (Linux siw attaches its receive
	// path late; docs/interop.md). Default 100 ms; negative: none.
	Settle time.Duration
}

func (o *Options) wait() time.Duration {
	if o.Wait > 0 {
		return o.Wait
	}
	return 3 * time.Second
}

func (o *Options) startupWait() time.Duration {
	if o.StartupWait > 0 {
		return o.StartupWait
	}
	return 12 * time.Second
}

// Session is one connection to the responder after a successful MPA
// startup, from the hostile peer's side. Scripts send segments through it.
type Session struct {
	// Params are the agreed startup parameters (we are the Initiator).
	Params mpa.Params
	// Advert is the memory the responder advertised.
	Advert Advert
	// RV is the RDMAP version in use (2 when V2 was agreed).
	RV uint8
	// Offending is the segment the case expects a Terminate for.
	Offending ULPDU

	nc  net.Conn
	mc  *mpa.Conn
	fw  *fpdu.Writer // frames into out
	out *captureConn
	msn [4]uint32 // next MSN to send per QN
}

// NextMSN returns the MSN for the next message on queue qn and counts it.
func (s *Session) NextMSN(qn uint32) uint32 {
	m := s.msn[qn]
	s.msn[qn]++
	return m
}

// Frame returns the FPDU (with CRC and markers as agreed) carrying u, in
// the stream position after everything framed so far.
func (s *Session) Frame(u ULPDU) ([]byte, error) {
	if err := s.fw.AppendCopy(u.Bytes); err != nil {
		return nil, err
	}
	if err := s.fw.Flush(); err != nil {
		return nil, err
	}
	return s.out.take(), nil
}

// Send frames u and writes it.
func (s *Session) Send(u ULPDU) error {
	b, err := s.Frame(u)
	if err != nil {
		return err
	}
	return s.Raw(b)
}

// SendOffending sends u as the segment the expected Terminate is about.
func (s *Session) SendOffending(u ULPDU) error {
	s.Offending = u
	return s.Send(u)
}

// Raw writes bytes as they are.
func (s *Session) Raw(b []byte) error {
	_ = s.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := s.nc.Write(b)
	return err
}

// CloseWrite half-closes the connection (TCP FIN).
func (s *Session) CloseWrite() error {
	if cw, ok := s.nc.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return s.nc.Close()
}

// start runs the MPA startup as Initiator.
func start(ctx context.Context, c *Case, o *Options) (*Session, error) {
	nc, err := o.Dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	cfg := mpa.DefaultConfig()
	cfg.CRC = !o.NoCRC
	cfg.P2P = false
	cfg.IRD, cfg.ORD = 4, 4
	cfg.Extensions = mpa.ExtRFC7306 | mpa.ExtV2
	if c.Startup != nil {
		c.Startup(cfg)
	}
	mc, err := mpa.Connect(ctx, nc, cfg)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("MPA startup: %w", err)
	}
	p := mc.Params()
	s := &Session{Params: p, Advert: ParseAdvert(mc.PeerPrivateData()), RV: wire.RDMAPVersion1, nc: nc, mc: mc, out: &captureConn{}}
	if p.Extensions&mpa.ExtV2 != 0 {
		s.RV = wire.RDMAPVersion2
	}
	for i := range s.msn {
		s.msn[i] = 1
	}
	s.fw = fpdu.NewConn(s.out, fpdu.Options{CRC: p.CRC, SendMarkers: p.SendMarkers}).Writer()
	if p.Extensions == 0 && o.Settle >= 0 {
		d := o.Settle
		if d == 0 {
			d = 100 * time.Millisecond
		}
		time.Sleep(d)
	}
	return s, nil
}

// close ends the session.
func (s *Session) close() { s.nc.Close() }

// errSilent is awaitAnswer's result when nothing arrived within the wait.
var errSilent = errors.New("no answer within the wait")

// answer is one segment received from the responder.
type answer struct {
	u   wire.ULPDU
	raw []byte
}

// awaitAnswer reads the responder's FPDUs until one that stop accepts, a
// Terminate, the end of the stream or the deadline.
func (s *Session) awaitAnswer(wait time.Duration, stop func(*wire.ULPDU) bool) (answer, error) {
	r := s.mc.FPDU().Reader()
	_ = s.nc.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, fpdu.MaxULPDULen)
	for {
		n, err := r.Next()
		if err == nil {
			err = r.Read(buf[:n])
		}
		if err == nil {
			err = r.End()
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return answer{}, errSilent
			}
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
				return answer{}, io.EOF
			}
			return answer{}, err
		}
		raw := append([]byte(nil), buf[:n]...)
		u, err := wire.ParseULPDU(raw)
		if err != nil && u.Opcode != wire.OpTerminate {
			return answer{raw: raw}, fmt.Errorf("unparsable segment from the responder: %w", err)
		}
		if u.Opcode == wire.OpTerminate || stop(&u) {
			return answer{u: u, raw: raw}, nil
		}
	}
}

// isReset reports a connection reset by the peer.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
