package iwarp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
)

// Without peer-to-peer mode the Responder keeps RFC 5044 §7.1.2's rule
// and sends nothing before the Initiator's first FPDU; with
// ConnOptions.ResponderSendsFirst it sends at once (what perftest's
// ib_write_lat server over siw needs).
func TestResponderSendsFirst(t *testing.T) {
	for _, first := range []bool{false, true} {
		name := "hold"
		if first {
			name = "sends-first"
		}
		t.Run(name, func(t *testing.T) {
			noP2P := &iwarp.ConnOptions{Interop: &iwarp.InteropOptions{DisableP2P: true}}
			a, b := connectPair(t, noP2P, &iwarp.ConnOptions{Interop: &iwarp.InteropOptions{DisableP2P: true, ResponderSendsFirst: first}})
			rbuf, err := a.pd.RegisterMemory(make([]byte, 16), iwarp.AccessLocalWrite)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.qp.PostRecv(iwarp.RecvWR{ID: 7, SGL: []iwarp.SGE{rbuf.SGE(0, 16)}}); err != nil {
				t.Fatal(err)
			}
			sbuf, err := b.pd.RegisterMemory([]byte("responder first!"), 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.qp.PostSend(iwarp.SendWR{ID: 1, Op: iwarp.OpSend, Flags: iwarp.Signaled, SGL: []iwarp.SGE{sbuf.SGE(0, 16)}}); err != nil {
				t.Fatal(err)
			}
			wait := 500 * time.Millisecond
			if first {
				wait = 10 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			c, err := a.cq.Next(ctx)
			if !first {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("the Initiator received %+v, %v before it sent anything", c, err)
				}
				return
			}
			if err != nil || c.ID != 7 || c.Len != 16 || string(rbuf.Bytes()) != "responder first!" {
				t.Fatalf("completion %+v, %v, %q", c, err, rbuf.Bytes())
			}
		})
	}
}
