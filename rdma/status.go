package rdma

// Status is the outcome of a work request.
type Status uint8

// Completion statuses.
const (
	// StatusSuccess: the work request completed. For a Send or Write it
	// means the data was handed to TCP, not that the peer placed it.
	StatusSuccess Status = iota
	// StatusFlushed: not completed: the QP left RTS first.
	StatusFlushed
	// StatusLocalLength: a received message did not fit the posted buffers.
	StatusLocalLength
	// StatusLocalProtection: a local buffer no longer valid (invalidated,
	// deregistered, re-keyed) or not covered by its region.
	StatusLocalProtection
	// StatusRemoteAccess: the peer refused the access (its Terminate).
	StatusRemoteAccess
	// StatusRemoteOperation: the peer failed the operation (its Terminate).
	StatusRemoteOperation
	// StatusFatal: the connection failed: the completion's error says why.
	StatusFatal
)

var statusNames = [...]string{
	StatusSuccess: "success", StatusFlushed: "flushed", StatusLocalLength: "local length error",
	StatusLocalProtection: "local protection error", StatusRemoteAccess: "remote access error",
	StatusRemoteOperation: "remote operation error", StatusFatal: "fatal error",
}

// String names the status.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "status?"
}

// QPState is a queue pair's state (RFC 5040 §6.1's stream states as the
// verbs name them).
type QPState uint8

// QP states.
const (
	StateIdle      QPState = iota // created, not connected
	StateRTS                      // connected: ready to send
	StateClosing                  // orderly disconnect under way: no new work, outstanding work drains
	StateTerminate                // a Terminate was sent or received
	StateError                    // torn down, every work request completed or flushed
)

var stateNames = [...]string{"IDLE", "RTS", "CLOSING", "TERMINATE", "ERROR"}

// String returns the state's name.
func (s QPState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "STATE?"
}
