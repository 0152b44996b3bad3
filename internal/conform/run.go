package conform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/wire"
)

// Verdict is a case's result.
type Verdict uint8

// The verdicts.
const (
	Pass Verdict = iota + 1
	Fail
	Skip
)

func (v Verdict) String() string {
	switch v {
	case Pass:
		return "PASS"
	case Fail:
		return "FAIL"
	case Skip:
		return "SKIP"
	}
	return "?"
}

// Result is the outcome of one case.
type Result struct {
	Case     *Case
	Verdict  Verdict
	Observed Observation
	// Reason explains a Fail or Skip.
	Reason string
	// Params are the startup's agreed parameters (for Script cases).
	Params mpa.Params
	// Advert is what the responder advertised.
	Advert Advert
	// ExpectedTerminate is the exact Terminate a receiver following RFC
	// 5040 §4.8 to the letter sends (for WantTerminate cases whose
	// offending segment is known), and Exact whether the received one
	// equals it byte for byte.
	ExpectedTerminate []byte
	Exact             bool
	// DialErr is the error of a dial that failed (Verdict Fail): the case
	// did not run, and the responder is unreachable, so a run of the
	// suite stops there.
	DialErr error
}

// Prescribed describes the expected outcome in one line.
func (c *Case) Prescribed() string {
	switch c.Want.Kind {
	case WantTerminate:
		return fmt.Sprintf("Terminate %s (%s)", codeName(c.Want.Code), c.Want.Code.Name())
	case WantAccept:
		return "accepted, no Terminate"
	case WantRefused:
		return "startup refused (no successful Reply)"
	case WantClosed:
		return "connection closed without a Terminate"
	default:
		return "connection torn down (a Terminate allowed)"
	}
}

// Run executes one case against the responder that o.Dial reaches.
func Run(ctx context.Context, c *Case, o *Options) Result {
	res := Result{Case: c}
	dial := o.Dial
	do := *o
	do.Dial = func(ctx context.Context) (net.Conn, error) {
		nc, err := dial(ctx)
		if err != nil {
			res.DialErr = err
		}
		return nc, err
	}
	o = &do
	if c.Raw != nil {
		nc, err := o.Dial(ctx)
		if err != nil {
			res.Verdict, res.Reason = Fail, "dial: "+err.Error()
			res.Observed = Observation{Kind: ObsError, Detail: err.Error()}
			return res
		}
		defer nc.Close()
		res.Observed = c.Raw(ctx, nc, o)
		return judge(res)
	}
	s, err := start(ctx, c, o)
	if err != nil {
		res.Verdict, res.Reason = Fail, err.Error()
		res.Observed = Observation{Kind: ObsError, Detail: err.Error()}
		return res
	}
	defer s.close()
	res.Params, res.Advert = s.Params, s.Advert
	if why := unmet(c.Needs, s); why != "" {
		res.Verdict, res.Reason = Skip, why
		return res
	}
	if err := c.Script(s); err != nil {
		// The responder may close while we still send: what it answered
		// before is what counts.
		res.Observed.Detail = "while sending: " + err.Error()
	}
	res.Observed = observe(s, o, c.Want.Kind == WantAccept)
	if c.Want.Kind == WantTerminate && (s.Offending.Bytes != nil || c.Want.Attach == AttachNone) {
		res.ExpectedTerminate = TerminateULPDU(s.RV, c.Want.Code, c.Want.Attach, s.Offending)
	}
	if res.Observed.Kind == ObsTerminate && res.ExpectedTerminate != nil {
		res.Exact = bytes.Equal(res.Observed.TerminateULPDU, res.ExpectedTerminate)
	}
	return judge(res)
}

// unmet returns why the session cannot run a case with needs, or "".
func unmet(n Need, s *Session) string {
	a, p := &s.Advert, &s.Params
	switch {
	case n&NeedRegion != 0 && !a.Have[SlotMain]:
		return "the responder advertised no region"
	case n&NeedReadOnly != 0 && !a.Have[SlotReadOnly]:
		return "the responder advertised no read-only region"
	case n&NeedOtherPD != 0 && !a.Have[SlotOtherPD]:
		return "the responder advertised no region of another protection domain"
	case n&NeedInvalidated != 0 && !a.Have[SlotInvalidated]:
		return "the responder advertised no invalidated STag"
	case n&NeedRekeyed != 0 && !a.Have[SlotRekeyed]:
		return "the responder advertised no re-keyed STag"
	case n&NeedWriteOnly != 0 && !a.Have[SlotWriteOnly]:
		return "the responder advertised no write-only region"
	case n&NeedWindows != 0 && !a.Have[SlotWindowUnbound]:
		return "the responder advertised no memory windows"
	case n&NeedRFC7306 != 0 && p.Extensions&mpa.ExtRFC7306 == 0:
		return "RFC 7306 was not agreed in the MPA startup"
	case n&NeedV2 != 0 && p.Extensions&mpa.ExtV2 == 0:
		return "the V2 extensions were not agreed in the MPA startup"
	case n&NeedNoRFC7306 != 0 && p.Extensions&mpa.ExtRFC7306 != 0:
		return "the responder agreed to RFC 7306 although not offered"
	case n&NeedIRD != 0 && p.ORD == 0:
		return "the responder accepts no inbound Read Request (IRD 0)"
	case n&NeedSendMarkers != 0 && !p.SendMarkers:
		return "the responder did not ask for markers"
	case n&NeedCRC != 0 && !p.CRC:
		return "CRCs are not in use"
	}
	return ""
}

// probeSTag is the Data Sink STag of the liveness probe: a zero-length
// Read whose Response must come back (zero-length Reads are not checked,
// RFC 5040 §4.4 and docs/spec/rdmap.md).
const probeSTag = 0x00C0FFEE

// observe waits for the responder's reaction. With probe, a zero-length
// Read Request is sent first and its Read Response proves the connection
// alive.
func observe(s *Session, o *Options, probe bool) Observation {
	if probe && s.Params.ORD > 0 {
		rr := ReadRequest(s.RV, s.NextMSN(wire.QNReadReq), wire.ReadRequest{SinkSTag: probeSTag, SinkTO: 0, Size: 0, SrcSTag: 0x00BADBAD, SrcTO: 0})
		_ = s.Send(rr)
	}
	a, err := s.awaitAnswer(o.wait(), func(u *wire.ULPDU) bool {
		return probe && u.DDP.Tagged && u.DDP.STag == probeSTag && u.Opcode == wire.OpReadResponse
	})
	switch {
	case err == nil && a.u.Opcode == wire.OpTerminate:
		t, _ := wire.ParseTerminate(a.raw[a.u.DDP.Len():])
		return Observation{Kind: ObsTerminate, Terminate: t, TerminateULPDU: a.raw}
	case err == nil:
		return Observation{Kind: ObsAlive, Detail: "a zero-length Read probe was answered"}
	case errors.Is(err, errSilent):
		if probe && s.Params.ORD == 0 {
			return Observation{Kind: ObsAlive, Detail: "no answer and no close within the wait (no probe: IRD 0)"}
		}
		return Observation{Kind: ObsSilent, Detail: fmt.Sprintf("waited %v", o.wait())}
	case errors.Is(err, io.EOF):
		return Observation{Kind: ObsClosed, Detail: "end of stream"}
	default:
		return Observation{Kind: ObsClosed, Detail: err.Error()}
	}
}

// judge sets the verdict from the observation and the case's Want.
func judge(r Result) Result {
	c, ob := r.Case, r.Observed
	if ob.Kind == ObsError {
		r.Verdict, r.Reason = Fail, ob.Detail
		return r
	}
	ok := false
	switch c.Want.Kind {
	case WantTerminate:
		ok = ob.Kind == ObsTerminate && ob.Terminate.Code == c.Want.Code
	case WantAccept:
		ok = ob.Kind == ObsAlive || ob.Kind == ObsStarted
	case WantRefused:
		ok = ob.Kind == ObsRefused || ob.Kind == ObsClosed
	case WantClosed:
		ok = ob.Kind == ObsClosed
	case WantTeardown:
		ok = ob.Kind == ObsClosed || ob.Kind == ObsTerminate
	}
	if ok {
		r.Verdict = Pass
	} else {
		r.Verdict, r.Reason = Fail, "prescribed: "+c.Prescribed()
	}
	return r
}
