package iwarp_test

import (
	"fmt"
	"testing"

	"github.com/goiwarp/iwarp"
)

// TestP2PMatrix: every RTR type offered by the Initiator against every set
// the Responder accepts; the connection comes up with the type both allow
// (Write, then Read, then Send by the Responder's preference) and carries
// traffic both ways, or fails when there is none in common.
func TestP2PMatrix(t *testing.T) {
	types := []iwarp.RTR{iwarp.RTRWrite, iwarp.RTRRead, iwarp.RTRSend}
	names := map[iwarp.RTR]string{iwarp.RTRWrite: "Write", iwarp.RTRRead: "Read", iwarp.RTRSend: "Send"}
	for _, offer := range types {
		for _, accept := range types {
			t.Run(fmt.Sprintf("offer=%s/accept=%s", names[offer], names[accept]), func(t *testing.T) {
				ctx := ctx10(t)
				ln, err := iwarp.Listen("tcp", "127.0.0.1:0", nil)
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				a, b := newEndpoint(t), newEndpoint(t)
				defer a.qp.Close()
				defer b.qp.Close()
				err, serr := dialAccept(ctx, ln, "tcp", ln.Addr().String(), a.qp, b.qp,
					&iwarp.ConnOptions{Interop: &iwarp.InteropOptions{RTR: offer}}, &iwarp.ConnOptions{Interop: &iwarp.InteropOptions{RTR: accept}})
				if offer != accept {
					if err == nil && serr == nil {
						t.Fatalf("connected without a common RTR type (%v)", a.qp.Attributes().RTR)
					}
					return
				}
				if err != nil || serr != nil {
					t.Fatalf("connect %v, accept %v", err, serr)
				}
				if got := a.qp.Attributes().RTR; got != names[offer] {
					t.Fatalf("RTR %q, want %q", got, names[offer])
				}
				// The Responder may send first now.
				rb, _ := a.pd.RegisterMemory(make([]byte, 8), iwarp.AccessLocalWrite)
				if err := a.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{rb.SGE(0, 8)}}); err != nil {
					t.Fatal(err)
				}
				sb, _ := b.pd.RegisterMemory([]byte("p2p-ok!!"), 0)
				if err := b.qp.Send(ctx, sb.SGE(0, 8)); err != nil {
					t.Fatal(err)
				}
				if c, err := a.cq.Next(ctx); err != nil || c.Len != 8 || string(rb.Bytes()) != "p2p-ok!!" {
					t.Fatalf("%+v %v", c, err)
				}
				// And the Initiator's Sends continue the MSNs after the RTR
				// (a Send RTR used MSN 1 of the Responder's QN 0).
				rb2, _ := b.pd.RegisterMemory(make([]byte, 8), iwarp.AccessLocalWrite)
				if err := b.qp.PostRecv(iwarp.RecvWR{ID: 2, SGL: []iwarp.SGE{rb2.SGE(0, 8)}}); err != nil {
					t.Fatal(err)
				}
				sa, _ := a.pd.RegisterMemory([]byte("back-ok!"), 0)
				if err := a.qp.Send(ctx, sa.SGE(0, 8)); err != nil {
					t.Fatal(err)
				}
				for {
					c, err := b.cq.Next(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if c.Op == iwarp.OpRecv {
						if c.Status != iwarp.StatusSuccess || string(rb2.Bytes()) != "back-ok!" {
							t.Fatalf("%+v (%v)", c, b.qp.Err())
						}
						break
					}
				}
			})
		}
	}
}
