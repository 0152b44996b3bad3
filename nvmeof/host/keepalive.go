package host

import (
	"context"
	"fmt"
	"time"

	"github.com/goiwarp/iwarp/internal/nvme"
)

// ticker is how the keep-alive goroutine is paced: a channel of ticks
// every d and the function that stops them.
type ticker func(d time.Duration) (<-chan time.Time, func())

// realTicker paces with a time.Ticker.
func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// startKeepAlive starts the keep-alive goroutine when the association has
// a keep-alive timeout: a Keep Alive command (NVMe Base §5.16) every KATO/2,
// as Linux's host sends, each bounded by KATO. A keep-alive that fails, or
// is not answered within KATO, fails the controller.
func (c *Controller) startKeepAlive() {
	if c.s.kato <= 0 {
		return
	}
	c.kaDone = make(chan struct{})
	newTicker := c.s.ticker
	if newTicker == nil {
		newTicker = realTicker
	}
	tick, stop := newTicker(c.s.kato / 2)
	go func() {
		defer close(c.kaDone)
		defer stop()
		for {
			select {
			case <-c.ctx.Done():
				return
			case <-tick:
			}
			if err := c.keepAlive(); err != nil {
				if c.ctx.Err() == nil {
					c.fail(fmt.Errorf("keep-alive: %w", err))
				}
				return
			}
		}
	}()
}

// keepAlive sends one Keep Alive command and waits for its response, at
// most KATO.
func (c *Controller) keepAlive() error {
	ctx, cancel := context.WithTimeout(c.ctx, c.s.kato)
	defer cancel()
	_, err := c.admin.exec(ctx, nvme.Command{Opcode: nvme.AdminKeepAlive}, nil, nil)
	return err
}
