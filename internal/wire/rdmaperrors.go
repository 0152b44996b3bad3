package wire

import "github.com/goiwarp/iwarp/rdma"

// Errors of RDMAP header parsing and validation. Where the RFCs leave the
// Terminate code of a malformed message open, the project reports it as an
// RDMAP remote operation error, code 0xFF "unspecified" (RFC 5040 §4.8).
var (
	// ErrShortRDMAPHeader: the ULPDU ends inside the RDMAP header its
	// opcode needs (Read Request, Atomic, Read V2 Request, Terminate).
	ErrShortRDMAPHeader = &ProtocolError{"ULPDU shorter than its RDMAP header", rdma.TermRDMAPOpUnspecified}
	// ErrRDMAPPayload: bytes follow the RDMAP header of a message that
	// carries no payload (Read Request, Atomic Request/Response, Read V2
	// Request).
	ErrRDMAPPayload = &ProtocolError{"payload after the RDMAP header of a message that carries none", rdma.TermRDMAPOpUnspecified}
	// ErrInvalidRDMAPVersion: the RV field is not the negotiated version
	// (RFC 5040 §4.2, §4.8: RDMAP/2/0x05).
	ErrInvalidRDMAPVersion = &ProtocolError{"invalid RDMAP version", rdma.TermRDMAPInvalidVersion}
	// ErrUnexpectedOpcode: the opcode is not defined for the RDMAP version
	// in use (RFC 5040 §4.8: RDMAP/2/0x06).
	ErrUnexpectedOpcode = &ProtocolError{"opcode not defined for this RDMAP version", rdma.TermRDMAPUnexpectedOpcode}
	// ErrOpcodeModel: a tagged opcode arrived in an untagged DDP segment
	// or the reverse (project choice: RDMAP/2/0x06, unexpected opcode).
	ErrOpcodeModel = &ProtocolError{"opcode in the wrong DDP buffer model", rdma.TermRDMAPUnexpectedOpcode}
	// ErrInvalidQN: an untagged segment names a queue other than the one
	// its opcode uses (RFC 5041 §7.2: DDP/2/0x01).
	ErrInvalidQN = &ProtocolError{"invalid QN for the opcode", rdma.TermDDPInvalidQN}
)
