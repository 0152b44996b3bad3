//go:build linux && !iwarp_portable

package verbs

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/rdmap"
	"github.com/goiwarp/iwarp/rdma"
)

// TestReview5TeardownUnderParkedWaiter: a goroutine parked reading its
// QP's socket (the token held, the poller's registration disarmed by the
// waiter) while the QP's own Device is closed, the QP is closed or
// disconnected, or the scripted peer (which never answers) closes,
// half-closes or resets the connection: the wait ends, with the flushed
// completion, and Close returns, within the bound. The waiter is a
// CQ.Wait for a receive, or a Do of a Read the peer never answers.
func TestReview5TeardownUnderParkedWaiter(t *testing.T) {
	teardowns := []struct {
		name string
		do   func(e *end, p *peer)
	}{
		{"own Device.Close", func(e *end, p *peer) { e.dev.Close() }},
		{"QP.Close", func(e *end, p *peer) { e.qp.Close() }},
		{"Disconnect", func(e *end, p *peer) {
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			e.qp.Disconnect(ctx)
		}},
		{"peer's close", func(e *end, p *peer) { p.nc.Close() }},
		{"peer's half-close", func(e *end, p *peer) { p.nc.(*net.TCPConn).CloseWrite() }},
		{"peer's reset", func(e *end, p *peer) { // EPOLLERR and EPOLLHUP, which a disarmed socket reports
			p.nc.(*net.TCPConn).SetLinger(0)
			p.nc.Close()
		}},
	}
	for _, td := range teardowns {
		for _, viaDo := range []bool{false, true} {
			name := td.name + "/CQ.Wait"
			if viaDo {
				name = td.name + "/Do"
			}
			t.Run(name, func(t *testing.T) {
				o := defaultOpts()
				o.drain = 100 * time.Millisecond
				e, p := scripted(t, o)
				ctx, cancel := context.WithTimeout(context.Background(), 3*bound)
				defer cancel()
				done := make(chan error, 1)
				h := e.qp.hp.Load()
				ctls := h.Ctls()
				if viaDo {
					sink := e.register(t, make([]byte, 8), mem.AccessLocalWrite)
					go func() {
						c, err := e.qp.Do(ctx, rdmap.SendWR{Op: rdma.OpRead, SGL: []rdma.SGE{whole(sink)}, Remote: rdma.RemoteBuffer{STag: 0x1234, TO: 0}})
						if err == nil && c.Status == rdma.StatusSuccess {
							t.Errorf("a Read nobody answered succeeded")
						}
						done <- err
					}()
				} else {
					e.postRecv(t, rdmap.RecvWR{ID: 1})
					go func() { done <- e.cq.Wait(ctx) }()
				}
				eventually(t, "the waiter parked reading the socket", func() bool {
					return review5Blocked("IO wait", []string{"(*QP).waitReading("}, nil)
				})
				if h.Ctls() == ctls {
					t.Fatal("a parked waiter has not disarmed the socket")
				}
				if !returnsWithin(bound, func() { td.do(e, p) }) {
					t.Fatalf("%s has not returned", td.name)
				}
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("the wait ended with %v, want its (flushed) completion", err)
					}
				case <-time.After(bound):
					t.Fatalf("after %s the parked waiter has not returned (state %v, %v)", td.name, e.qp.State(), e.qp.Err())
				}
				e.closeWithin(t)
			})
		}
	}
}
