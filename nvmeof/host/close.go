package host

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// Bounds of Close's steps that involve the target, whatever ctx allows,
// so that Close ends whatever the target does.
const (
	// shutdownTimeout bounds the normal shutdown (CC.SHN, then
	// CSTS.SHST), as Linux's shutdown_timeout default.
	shutdownTimeout = 5 * time.Second
	// disconnectTimeout bounds the orderly close of the connections.
	disconnectTimeout = 5 * time.Second
)

// usable returns nil while the controller runs, else why it stopped.
func (c *Controller) usable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return ErrClosed
	}
	return c.err
}

// Close ends the association in order, as Linux's host does: it stops
// the keep-alive, disconnects the I/O queues (commands still outstanding
// on them fail with ErrClosed), shuts the controller down (CC.SHN normal,
// then CSTS.SHST complete, at most 5 s) and disconnects the admin queue.
// A failed controller is only torn down. Close is bounded by ctx and ends
// whatever the target does; it returns the error of a step that failed,
// ErrClosed when called again, and nil otherwise.
func (c *Controller) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closing = true
	failed := c.err != nil
	if !failed {
		c.err = ErrClosed
		close(c.dead)
	}
	c.mu.Unlock()
	c.cancel()
	if c.kaDone != nil {
		<-c.kaDone // its command ends with c.ctx
	}
	var err error
	if !failed {
		err = c.shutdown(ctx)
	}
	c.teardown()
	return err
}

// shutdown disconnects the I/O queues, shuts the controller down and
// disconnects the admin queue.
func (c *Controller) shutdown(ctx context.Context) error {
	err := c.disconnect(ctx, c.io)
	sctx, cancel := context.WithTimeout(ctx, shutdownTimeout)
	defer cancel()
	cc := c.regs.cc
	cc.SHN = nvme.SHNNormal
	serr := c.setProperty(sctx, nvme.PropCC, cc.Uint32())
	if serr == nil {
		serr = c.waitStatus(sctx, shutdownTimeout, func(s nvme.CSTS) (bool, error) {
			return s.SHST == nvme.SHSTComplete, nil
		})
	}
	return errors.Join(err, serr, c.disconnect(ctx, []*queue{c.admin}))
}

// disconnect stops qs with ErrClosed and closes their connections in
// order, at once.
func (c *Controller) disconnect(ctx context.Context, qs []*queue) error {
	ctx, cancel := context.WithTimeout(ctx, disconnectTimeout)
	defer cancel()
	errs := make([]error, len(qs))
	var wg sync.WaitGroup
	for i, q := range qs {
		if q == nil {
			continue
		}
		q.stop(ErrClosed)
		wg.Go(func() { errs[i] = q.qp.Disconnect(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// teardown closes every connection, waits for the queues' goroutines
// (closing a QP ends them at once) and frees the queues' resources and the
// device if Connect opened it.
func (c *Controller) teardown() {
	c.cancel()
	if c.kaDone != nil {
		<-c.kaDone // its command ends with c.ctx
	}
	c.mu.Lock()
	qs := append([]*queue(nil), c.queues...)
	if c.err == nil {
		c.err = ErrClosed
		close(c.dead)
	}
	c.mu.Unlock()
	for _, q := range qs {
		q.stop(ErrClosed)
		q.qp.Close()
	}
	for _, q := range qs {
		<-q.done
		q.release()
	}
	c.closers.Wait()
	if c.ownDev {
		c.dev.Close()
	}
}
