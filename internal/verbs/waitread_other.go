//go:build !linux || iwarp_portable

package verbs

import "context"

// waitReading reports false: without non-blocking reads through the
// RawConn a waiter does not read the socket itself.
func (q *QP) waitReading(context.Context, *Waiter, *CQ) (bool, error) { return false, nil }

// interruptReader does nothing: there is no reading waiter here.
func (q *QP) interruptReader() {}

// unwatchCtx does nothing: no context is registered here.
func (q *QP) unwatchCtx() {}

// bindReader does nothing here.
func (q *QP) bindReader() {}
