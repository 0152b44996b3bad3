package rdma

// WindowType is a memory window's type (RFC 5040 §2's Memory Window;
// libibverbs' enum ibv_mw_type).
type WindowType uint8

// The memory window types.
const (
	// WindowType1 is bound and unbound by a call (ibv_bind_mw) and cannot
	// be invalidated by a Local Invalidate or a Send with Invalidate.
	WindowType1 WindowType = 1
	// WindowType2 is bound by a send work request (OpBindWindow), in
	// send-queue order, and unbound by a Local Invalidate or, if bound with
	// AccessRemoteInvalidate, by the peer's Send with Invalidate. It must
	// be unbound before it is bound again.
	WindowType2 WindowType = 2
)

// String names the type.
func (t WindowType) String() string {
	switch t {
	case WindowType1:
		return "type 1"
	case WindowType2:
		return "type 2"
	}
	return "unknown type"
}
