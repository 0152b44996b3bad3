package conform

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/goiwarp/iwarp/internal/mpa"
	"github.com/goiwarp/iwarp/internal/wire"
)

// startupCases abuse the MPA startup (RFC 5044 §7, RFC 6581): they speak
// the Request themselves and watch what the Responder answers.
func startupCases() []*Case {
	return []*Case{
		{
			Name: "Startup/no-Request-sent/refused", Category: "MPA startup",
			Spec: "RFC 5044 §7.1, docs/spec/mpa.md: a Responder bounds the wait for the Request and closes a connection that sends none",
			Raw: func(ctx context.Context, nc net.Conn, o *Options) Observation {
				return awaitClose(nc, o.startupWait())
			},
			Want: refused,
		},
		{
			Name: "Startup/Request-one-octet-per-10ms/accepted", Category: "MPA startup",
			Spec: "RFC 5044 §7.1: the Request may arrive in any number of TCP segments; a slow but timely one is answered",
			Raw: func(ctx context.Context, nc net.Conn, o *Options) Observation {
				req := request(o, nil)
				for i := range req {
					if _, err := nc.Write(req[i : i+1]); err != nil {
						return Observation{Kind: ObsClosed, Detail: fmt.Sprintf("closed after %d octets: %v", i, err)}
					}
					time.Sleep(10 * time.Millisecond)
				}
				return readReply(nc, o.wait())
			},
			Want: Want{Kind: WantAccept},
		},
		{
			Name: "Startup/private-data-over-limit/refused", Category: "MPA startup",
			Spec: "RFC 5044 §7.1: private data is at most 512 octets; a Request announcing 1024 is refused (closed, or rejected)",
			Raw: func(ctx context.Context, nc net.Conn, o *Options) Observation {
				req := request(o, make([]byte, 1024))
				_, _ = nc.Write(req)
				return readReply(nc, o.wait())
			},
			Want: refused,
		},
		{
			Name: "Startup/FPDU-pipelined-after-Request/refused", Category: "MPA startup",
			Spec: "RFC 5044 §7.1.2: the Initiator sends no FPDU before the Reply; an FPDU in the same segment as the Request is a protocol violation and the connection is closed",
			Raw: func(ctx context.Context, nc net.Conn, o *Options) Observation {
				req := request(o, nil)
				req = append(req, RawFPDU(!o.NoCRC, Tagged(wire.RDMAPVersion1, wire.OpWrite, true, 0x77, 0, nil).Bytes)...)
				_, _ = nc.Write(req)
				return readReply(nc, o.wait())
			},
			Want: refused,
		},
		{
			Name: "Startup/wrong-key/refused", Category: "MPA startup",
			Spec: "RFC 5044 §7.1: a frame whose key is not the Request key is not an MPA Request; the connection is closed",
			Raw: func(ctx context.Context, nc net.Conn, o *Options) Observation {
				req := request(o, nil)
				copy(req, "MPA ID Rep Frame")
				_, _ = nc.Write(req)
				return readReply(nc, o.wait())
			},
			Want: refused,
		},
		{
			Name: "Startup/MPA-Rev-0/refused", Category: "MPA startup",
			Spec: "RFC 5044 §7.1, RFC 6581 §4: Rev 0 is not spoken by this project (docs/spec/mpa.md); the Responder refuses it",
			Raw: func(ctx context.Context, nc net.Conn, o *Options) Observation {
				req := request(o, nil)
				req[17] = 0
				_, _ = nc.Write(req)
				return readReply(nc, o.wait())
			},
			Want: refused,
		},
	}
}

// request is a valid Rev 2 MPA Request (CRC as o says, IRD/ORD 4/4) with
// the given private data after the IRD/ORD block.
func request(o *Options, pd []byte) []byte {
	cfg := mpa.DefaultConfig()
	cfg.CRC, cfg.P2P, cfg.IRD, cfg.ORD = !o.NoCRC, false, 4, 4
	cfg.Extensions, cfg.NoAdvertise = 0, true
	hdr, blk := mpa.RequestFrame(cfg)
	hdr.PrivateData = append(mpa.AppendIRDORD(nil, &blk), pd...)
	return mpa.AppendFrame(nil, &hdr)
}

// readReply waits for the Responder's Reply.
func readReply(nc net.Conn, wait time.Duration) Observation {
	_ = nc.SetReadDeadline(time.Now().Add(wait))
	var h [mpa.HeaderLen]byte
	if _, err := io.ReadFull(nc, h[:]); err != nil {
		return closedOrSilent(err, wait)
	}
	pd := make([]byte, binary.BigEndian.Uint16(h[18:]))
	if _, err := io.ReadFull(nc, pd); err != nil {
		return closedOrSilent(err, wait)
	}
	f, _, err := mpa.ParseFrame(append(h[:], pd...), mpa.MaxPrivateData)
	switch {
	case err != nil:
		return Observation{Kind: ObsRefused, Detail: "an invalid Reply: " + err.Error()}
	case !f.Reply:
		return Observation{Kind: ObsRefused, Detail: "a Request instead of a Reply"}
	case f.Flags&mpa.FlagReject != 0:
		return Observation{Kind: ObsRefused, Detail: "a Reply with R (rejected)"}
	}
	return Observation{Kind: ObsStarted, Detail: fmt.Sprintf("Reply Rev %d, flags %#02x", f.Rev, byte(f.Flags))}
}

// awaitClose waits for the peer to close the connection.
func awaitClose(nc net.Conn, wait time.Duration) Observation {
	start := time.Now()
	_ = nc.SetReadDeadline(start.Add(wait))
	var b [64]byte
	n, err := nc.Read(b[:])
	if n > 0 {
		return Observation{Kind: ObsStarted, Detail: fmt.Sprintf("the Responder sent %d octets first", n)}
	}
	ob := closedOrSilent(err, wait)
	if ob.Kind == ObsClosed {
		ob.Kind, ob.Detail = ObsRefused, fmt.Sprintf("closed after %v", time.Since(start).Round(10*time.Millisecond))
	}
	return ob
}

// closedOrSilent turns a read error into an observation.
func closedOrSilent(err error, wait time.Duration) Observation {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return Observation{Kind: ObsSilent, Detail: fmt.Sprintf("still open after %v", wait)}
	}
	return Observation{Kind: ObsClosed, Detail: err.Error()}
}
