package perftest

import (
	"context"
	"errors"
	"fmt"

	"github.com/goiwarp/iwarp"
)

// comm is perftest's communication channel: the first rdma_cm
// connection, over which the two sides exchange small messages in lock
// step with Sends. The client sends each message first and then waits for
// the server's; the server waits and then answers. One receive is kept
// posted: the peer sends its next message only after it has our previous
// one, and we re-post before we send.
type comm struct {
	client bool
	qp     *iwarp.QP
	cq     *iwarp.CQ
	rbuf   *iwarp.MR
	sbuf   *iwarp.MR
	step   int  // messages exchanged so far (for errors)
	posted bool // the receive is posted
}

// commMax is the largest message of the exchange (the QP record).
const commMax = 64

func newComm(pd *iwarp.PD, client bool) (*comm, error) {
	c := &comm{client: client}
	var err error
	if c.cq, err = pd.Device().NewCQ(4, nil); err != nil {
		return nil, err
	}
	if c.qp, err = pd.NewQP(&iwarp.QPConfig{SendCQ: c.cq, RecvCQ: c.cq, SendQueueDepth: 2, RecvQueueDepth: 2, MaxSGE: 1, IRD: 1, ORD: 1}); err != nil {
		return nil, err
	}
	if c.rbuf, err = pd.RegisterMemory(make([]byte, commMax), iwarp.AccessLocalWrite); err != nil {
		return nil, err
	}
	if c.sbuf, err = pd.RegisterMemory(make([]byte, commMax), 0); err != nil {
		return nil, err
	}
	return c, c.post()
}

// post posts the receive unless it is posted. It is re-posted just before
// this side sends (the peer answers only after that), not right after a
// message arrived: the peer may close the connection after its last one.
func (c *comm) post() error {
	if c.posted {
		return nil
	}
	c.posted = true
	return c.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{c.rbuf.SGE(0, commMax)}})
}

// xchg sends mine and returns the peer's message of the same step, which
// must be want bytes long; what names the step in errors.
func (c *comm) xchg(ctx context.Context, what string, mine []byte, want int) ([]byte, error) {
	c.step++
	if c.client {
		if err := c.send(ctx, mine); err != nil {
			return nil, fmt.Errorf("perftest exchange %d (%s): send: %w", c.step, what, err)
		}
	}
	got, err := c.recv(ctx)
	if err != nil {
		return nil, fmt.Errorf("perftest exchange %d (%s): %w", c.step, what, err)
	}
	if len(got) != want {
		return nil, fmt.Errorf("perftest exchange %d (%s): the peer sent %d bytes, want %d (a different perftest version or test?)", c.step, what, len(got), want)
	}
	if !c.client {
		if err := c.send(ctx, mine); err != nil {
			return nil, fmt.Errorf("perftest exchange %d (%s): send: %w", c.step, what, err)
		}
	}
	return got, nil
}

func (c *comm) send(ctx context.Context, b []byte) error {
	if err := c.post(); err != nil {
		return err
	}
	n := copy(c.sbuf.Bytes(), b)
	return c.qp.Send(ctx, c.sbuf.SGE(0, n))
}

// recv waits for the peer's next message and copies it out.
func (c *comm) recv(ctx context.Context) ([]byte, error) {
	comp, err := c.cq.Next(ctx)
	if err != nil {
		if qerr := c.qp.Err(); qerr != nil {
			return nil, qerr
		}
		return nil, err
	}
	if comp.Status != iwarp.StatusSuccess {
		return nil, fmt.Errorf("receive: %v: %w", comp.Status, comp.Err)
	}
	if comp.Op != iwarp.OpRecv {
		return nil, fmt.Errorf("unexpected %v completion", comp.Op)
	}
	c.posted = false
	return append([]byte(nil), c.rbuf.Bytes()[:comp.Len]...), nil
}

// errPeerGone reports whether err means the peer closed the connection
// (which ends perftest's optional final exchange).
func errPeerGone(err error) bool {
	return errors.Is(err, iwarp.ErrPeerDisconnected) || errors.Is(err, iwarp.ErrDisconnected)
}

func (c *comm) close() {
	if c.qp != nil {
		c.qp.Close()
	}
	if c.cq != nil {
		c.cq.Close()
	}
}
