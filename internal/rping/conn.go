package rping

import (
	"context"
	"errors"
	"fmt"

	"github.com/goiwarp/iwarp"
)

// rping's queue sizes: RPING_SQ_DEPTH sends, 2 receives, a CQ of twice the
// send depth; one SGE each way; IRD and ORD 1 (rping_init_conn_param).
const (
	sqDepth = 16
	rqDepth = 2
	cqDepth = 2 * sqDepth
)

// conn is one connection's control block: rping's struct rping_cb.
type conn struct {
	o      *Options
	p      *printer
	server bool
	size   int
	// id is the rdma_cm identifier the connection's events name: the
	// client's only one, or the server's child.
	id any

	cq *iwarp.CQ
	qp *iwarp.QP
	// recvMR and sendMR hold the 16-byte messages; rdmaMR is the client's
	// sink and the server's Read sink and Write source; startMR (client)
	// is the buffer the server reads.
	recvMR, sendMR, rdmaMR, startMR *iwarp.MR

	state int
	// err says why state became stateError (for the caller's message).
	err error
	// remote is the last advertisement received (server).
	remote iwarp.RemoteBuffer
}

// newConn allocates one connection's resources on o.Device and posts its
// receive (rping_setup_qp, rping_setup_buffers, ibv_post_recv).
func newConn(o *Options, p *printer, dev *iwarp.Device, server bool) (*conn, error) {
	c := &conn{o: o, p: p, server: server, size: o.size(), state: stateIdle}
	c.id = c
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, err
	}
	if c.cq, err = dev.NewCQ(cqDepth, nil); err != nil {
		return nil, err
	}
	c.qp, err = pd.NewQP(&iwarp.QPConfig{SendCQ: c.cq, RecvCQ: c.cq, SendQueueDepth: sqDepth,
		RecvQueueDepth: rqDepth, MaxSGE: 1, IRD: 1, ORD: 1})
	if err != nil {
		c.cq.Close()
		return nil, err
	}
	reg := func(n int, acc iwarp.Access) *iwarp.MR {
		if err != nil {
			return nil
		}
		var mr *iwarp.MR
		mr, err = pd.RegisterMemory(make([]byte, n), acc)
		return mr
	}
	remote := iwarp.AccessLocalWrite | iwarp.AccessRemoteRead | iwarp.AccessRemoteWrite
	c.recvMR = reg(advLen, iwarp.AccessLocalWrite)
	c.sendMR = reg(advLen, 0)
	c.rdmaMR = reg(c.size, remote)
	if !server {
		c.startMR = reg(c.size, remote)
	}
	if err == nil {
		err = c.postRecv()
	}
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// close releases the connection's QP, memory and CQ.
func (c *conn) close() {
	c.qp.Close()
	for _, mr := range []*iwarp.MR{c.recvMR, c.sendMR, c.rdmaMR, c.startMR} {
		if mr != nil {
			mr.Close()
		}
	}
	c.cq.Close()
}

func (c *conn) postRecv() error {
	return c.qp.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{c.recvMR.SGE(0, advLen)}})
}

// role is how rping's messages name this side.
func (c *conn) role() string {
	if c.server {
		return "server"
	}
	return "client"
}

// post posts one signaled work request; on failure it prints rping's "post
// send error" line and returns false.
func (c *conn) post(wr iwarp.SendWR) bool {
	wr.Flags |= iwarp.Signaled
	if err := c.qp.PostSend(wr); err != nil {
		c.p.errf("post send error %d\n", postErrno(err))
		c.fail(err)
		return false
	}
	return true
}

// sendMsg Sends the 16 bytes of the send buffer, inline (their buffer is
// free again at once).
func (c *conn) sendMsg() bool {
	return c.post(iwarp.SendWR{Op: iwarp.OpSend, Flags: iwarp.Inline, SGL: []iwarp.SGE{c.sendMR.SGE(0, advLen)}})
}

// fail records the first reason for stateError.
func (c *conn) fail(err error) {
	c.state = stateError
	if c.err == nil {
		c.err = err
	}
}

// wait is rping's sem_wait on the completion handler: it handles
// completions (rping_cq_event_handler) until one moves the state on — a
// message, a Read or Write completion, an error, or the end of the
// connection — as rping's CQ and CM threads would.
func (c *conn) wait(ctx context.Context) {
	for {
		wc, err := c.cq.Next(ctx)
		if err != nil {
			c.fail(err)
			return
		}
		if wc.Status == iwarp.StatusFlushed {
			// rping ignores flushed work; the CM's DISCONNECTED event
			// follows. Here the QP's end says why it ended.
			c.ended(ctx)
			return
		}
		if wc.Status != iwarp.StatusSuccess {
			c.p.errf("cq completion failed status %d\n", wcStatus(wc.Status))
			c.fail(fmt.Errorf("%v completed with %v: %w", wc.Op, wc.Status, wc.Err))
			return
		}
		switch wc.Op {
		case iwarp.OpSend:
			c.p.dbg("send completion\n")
			continue
		case iwarp.OpWrite:
			c.p.dbg("rdma write completion\n")
			c.state = stateWriteComplete
		case iwarp.OpRead:
			c.p.dbg("rdma read completion\n")
			c.state = stateReadComplete
		case iwarp.OpRecv:
			c.p.dbg("recv completion\n")
			c.received(wc.Len)
		default:
			c.p.dbg("unknown!!!!! completion\n")
			c.fail(fmt.Errorf("unexpected %v completion", wc.Op))
		}
		return
	}
}

// received handles a receive completion (server_recv, client_recv) and
// reposts the receive.
func (c *conn) received(n int) {
	if n != advLen {
		c.p.errf("Received bogus data, size %d\n", n)
		c.p.errf("recv wc error: %d\n", -1)
		c.fail(fmt.Errorf("the peer sent a message of %d bytes, not %d", n, advLen))
		return
	}
	if c.server {
		_ = c.remote.UnmarshalBinary(c.recvMR.Bytes()) // 16 bytes: cannot fail
		c.p.dbg("Received rkey %x addr %x len %d from peer\n", c.remote.STag, c.remote.TO, c.remote.Len)
		if c.state <= stateConnected || c.state == stateWriteComplete {
			c.state = stateReadAdv
		} else {
			c.state = stateWriteAdv
		}
	} else if c.state == stateReadAdv {
		c.state = stateWriteAdv
	} else {
		c.state = stateWriteComplete
	}
	if err := c.postRecv(); err != nil {
		c.p.errf("post recv error: %d\n", postErrno(err))
		c.fail(err)
	}
}

// ended handles the end of the connection, which rping learns from the
// CM's RDMA_CM_EVENT_DISCONNECTED: it prints rping's "DISCONNECT EVENT"
// line. An orderly close by the peer is rping's DISCONNECTED state; a
// connection that failed (a Terminate, a reset) is an error here, where
// rping, which does not read the QP's asynchronous events, cannot tell.
func (c *conn) ended(ctx context.Context) {
	select {
	case <-c.qp.Done():
	case <-ctx.Done():
		c.fail(ctx.Err())
		return
	}
	c.disconnected()
	err := c.qp.Err()
	if errors.Is(err, iwarp.ErrPeerDisconnected) || errors.Is(err, iwarp.ErrDisconnected) {
		c.state = stateDisconnected
		return
	}
	c.fail(fmt.Errorf("the connection failed: %w", err))
}

// disconnect closes a connection that is still up in order
// (rping_disconnect, after the loop ended, whatever its outcome) and
// reports whether the peer closed its side too. rping does not wait for
// that; the wait here is bounded by the timeout.
func (c *conn) disconnect(ctx context.Context) bool {
	if c.qp.State() != iwarp.StateRTS {
		return false
	}
	dctx, cancel := context.WithTimeout(ctx, c.o.timeout())
	defer cancel()
	return c.qp.Disconnect(dctx) == nil
}

// disconnected prints the DISCONNECTED event.
func (c *conn) disconnected() {
	c.p.event("RDMA_CM_EVENT_DISCONNECTED", c.id, !c.server)
	c.p.errf("%s DISCONNECT EVENT...\n", c.role())
}

// expect waits (wait) and checks that the state became want, which rping
// names name in its message when it did not ("wait for RDMA_READ_ADV state
// 10"; not when ctx ended: rping would have been killed).
func (c *conn) expect(ctx context.Context, want int, name string) error {
	c.wait(ctx)
	if c.state == want {
		return nil
	}
	if !interrupted(ctx, c.err) {
		c.p.errf("wait for %s state %d\n", name, c.state)
	}
	if c.err != nil {
		return c.err
	}
	return fmt.Errorf("waiting for %s, the connection reached state %d", name, c.state)
}

// interrupted reports whether err is ctx's end (an interrupted rping is
// killed: it prints nothing more).
func interrupted(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
}

// result is what rping's test loops return: success when the connection
// ended in order, whatever the loop was waiting for.
func (c *conn) result(loopErr error) error {
	if c.state == stateDisconnected {
		return nil
	}
	return loopErr
}
