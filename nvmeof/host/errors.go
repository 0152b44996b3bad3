package host

import "errors"

// Errors of the host. An error a Controller or Namespace returns matches
// one of these with errors.Is, or is a *nvmeof.StatusError (the controller
// completed the command with a status other than success), or is the
// context's error, or, from Connect, wraps the iwarp error that kept a
// queue from connecting (the target unreachable, the MPA startup failed)
// or that the local device gave (a registration refused).
var (
	// ErrInvalidConfig: a Config field is out of range.
	ErrInvalidConfig = errors.New("nvmeof: invalid configuration")
	// ErrClosed: the Controller was closed (Controller.Close); commands
	// in flight when Close began fail with it too.
	ErrClosed = errors.New("nvmeof: controller closed")
	// ErrFailed: the controller association failed (a queue's connection
	// broke, a keep-alive failed, the controller broke the protocol).
	// Every command outstanding then fails with an error matching
	// ErrFailed that also wraps the cause (an iwarp error, ErrProtocol,
	// a *nvmeof.StatusError of the keep-alive, ...). Controller.Err
	// returns it.
	ErrFailed = errors.New("nvmeof: controller failed")
	// ErrProtocol: the controller sent something the transport binding
	// does not allow (a response of the wrong length, for a command not
	// outstanding, a connection reply that is not NVMe over RDMA's).
	ErrProtocol = errors.New("nvmeof: protocol violation by the controller")
	// ErrRejected: the target refused a queue's connection; the error
	// also wraps the *iwarp.RejectedError with the target's private data.
	ErrRejected = errors.New("nvmeof: connection rejected by the target")
	// ErrNotReady: the controller did not report ready (CSTS.RDY) within
	// its timeout (CAP.TO), or reported a fatal status (CSTS.CFS).
	ErrNotReady = errors.New("nvmeof: controller not ready")
	// ErrRange: an I/O's buffer is not a whole number of blocks, or its
	// blocks lie outside the namespace.
	ErrRange = errors.New("nvmeof: I/O outside the namespace or not a whole number of blocks")
	// ErrNotSupported: the controller does not offer what was asked (an
	// optional command, I/O on a discovery controller, the discovery log
	// on an NVM subsystem).
	ErrNotSupported = errors.New("nvmeof: not supported by the controller")
)
