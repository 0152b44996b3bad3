package mpa

import (
	"context"
	"errors"
	"net"
)

// ConnectRev1Fallback is Connect with the retry cxgb4 does (docs/spec/
// mpa.md §1): it dials a connection and runs Connect with cfg (nil means
// DefaultConfig()); if the Request was Rev 2 and the Responder closed the
// connection without sending a byte of a Reply (ErrClosedBeforeFrame), it
// dials a fresh connection and tries once more with Rev 1, which has no
// IRD/ORD block and no peer-to-peer mode. It does not retry when cfg
// requires peer-to-peer mode. Both attempts share ctx.
func ConnectRev1Fallback(ctx context.Context, dial func(context.Context) (net.Conn, error), cfg *Config) (*Conn, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	nc, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	c, err := Connect(ctx, nc, cfg)
	if err == nil || cfg.rev() != Rev2 || cfg.RequireP2P || !errors.Is(err, ErrClosedBeforeFrame) {
		return c, err
	}
	v1 := *cfg
	v1.Rev, v1.P2P = Rev1, false
	if nc, err = dial(ctx); err != nil {
		return nil, err
	}
	return Connect(ctx, nc, &v1)
}
