// Package iwarp is a pure-Go software RDMA NIC: an iWARP stack (MPA, DDP and
// RDMAP, RFC 5044/6581, 5041 and 5040, with the RFC 7306 extensions and the
// RDMAP Extensions V2 draft) that gives Go programs one-sided RDMA over
// ordinary TCP and talks on the wire to Linux soft-iWARP (siw) and iWARP
// hardware. It needs no special NIC, kernel module or cgo.
//
// The API follows the verbs model of libibverbs and librdmacm (docs/verbs.md
// maps one to the other), with Go types, contexts and errors. The common
// case has a short path: [Dial] returns a connected [QP] that owns its
// queues, [Listener.Serve] serves registered memory to every client, and
// [QP.PeerMemory] finds what the peer advertised (docs/api.md).
//
// The vocabulary the types below use — [SendWR], [RecvWR], [SGE],
// [Completion], [Opcode], [SendFlags], [Status], [Access], [TermCode] — is
// defined once, in package [github.com/goiwarp/iwarp/rdma], and re-exported
// here under the same names.
//
// # Objects
//
//   - [Device] is the software RNIC ([NewDevice]); a program normally opens
//     one. It holds the STag table and is the atomicity domain of RFC 7306.
//   - [PD] is a protection domain ([Device.AllocPD]). [MR] is a []byte the
//     caller owns, registered in a PD with [Access] rights
//     ([PD.RegisterMemory]). Its [RemoteBuffer] ([MR.Remote],
//     [MR.RemoteSlice]) names it to a peer; its 16-byte encoding
//     ([RemoteBuffer.MarshalBinary]) is what a program sends to advertise
//     memory. [SGE] names local bytes of an MR by its STag ([MR.SGE]).
//     [PD.RegisterWords] registers aligned 64-bit words for atomics.
//   - [MW] is a memory window ([PD.AllocMW]): a remote view of part of an
//     MR, bound by a call (type 1) or by a send work request (type 2).
//   - [CQ] is a completion queue ([Device.NewCQ]): [CQ.Poll] never blocks,
//     [CQ.Next] and [CQ.Wait] wait with a context, [CQ.Arm] and an
//     [EventChannel] notify.
//   - [QP] is a queue pair, one endpoint of one connection ([PD.NewQP] with
//     a [QPConfig]); an [SRQ] ([PD.NewSRQ]) can feed the receives of
//     several QPs.
//   - Connections: the passive side runs [Listen] and [Listener.Accept],
//     then [ConnRequest.Accept] (or [ConnRequest.Reject]) with its QP; the
//     active side calls [QP.Connect]. [ConnOptions] holds the MPA choices
//     (private data, CRC, extensions, and in [InteropOptions] the
//     revision, markers and peer-to-peer mode); the zero value gives the
//     defaults. [QP.Attributes] says what was
//     negotiated. [QP.Disconnect] closes in order, [QP.Close] at once.
//
// # Work requests and blocking calls
//
// [QP.PostSend] and [QP.PostRecv] post [SendWR] and [RecvWR] values; their
// [Completion] values arrive on the QP's CQs, in posting order per queue.
// The blocking calls post one work request and wait for its own completion:
// [QP.Send], [QP.Write], [QP.Read], [QP.WriteWithImmediate],
// [QP.ImmediateData], [QP.FetchAdd], [QP.CompareSwap] and their masked
// forms, [QP.ReadV2], [QP.SendWithImmediate], and [QP.Do] for any
// [SendWR]. A cancelled context ends the wait, not the work request, whose
// buffers stay the QP's until it completes. What a completion promises, and
// who owns a buffer when, is docs/semantics.md.
//
// A blocking call whose work request fails returns a [*WRError] with its
// [Status] and cause. A protocol violation by either side ends the
// connection with an RDMAP Terminate: the QP's error ([QP.Err], once
// [QP.Done] is closed) is then a [*TerminateError] with its code, and the
// work requests still outstanding complete with an error status
// (docs/semantics.md §9).
//
// # RFC 7306 and the V2 draft
//
// Remote atomics with masks ([QP.FetchAdd], [QP.CompareSwap],
// [QP.FetchAddMasked], [QP.CompareSwapMasked]), Immediate Data and Write with
// Immediate come from RFC 7306; RDMAP version 2, Send with Immediate and
// RDMA Read V2 from the V2 draft. Both are offered by default in the MPA
// startup, with the project's extension bits, and used only when the peer
// agrees ([QPAttributes].RFC7306 and V2) or is declared to support them
// ([ConnOptions].PeerExtensions). Against any other peer, Linux siw for
// one, these calls fail with [ErrNotSupportedByPeer] and nothing is sent.
// docs/extensions.md gives the wire bytes.
//
// # Example
//
// A client writes into memory that a server advertised (with
// [Listener.Serve] and [ServeConfig].Memory, registered with remote write
// and read access), then reads it back. The package's runnable examples run
// both sides in one program.
//
//	func writeAndRead(ctx context.Context, addr string, msg []byte) ([]byte, error) {
//		qp, err := iwarp.Dial(ctx, addr, nil)
//		if err != nil {
//			return nil, err
//		}
//		defer qp.Close()
//		mem, err := qp.PeerMemory()
//		if err != nil {
//			return nil, err
//		}
//		src, err := qp.PD().RegisterMemory(msg, 0) // local reads need no access right
//		if err != nil {
//			return nil, err
//		}
//		sink, err := qp.PD().RegisterMemory(make([]byte, len(msg)), iwarp.AccessLocalWrite)
//		if err != nil {
//			return nil, err
//		}
//		if err := qp.Write(ctx, mem[0], src.SGE(0, len(msg))); err != nil {
//			return nil, err
//		}
//		// Answered only after the Write was placed (RFC 5040 §5.5).
//		if err := qp.Read(ctx, mem[0], sink.SGE(0, len(msg))); err != nil {
//			return nil, err
//		}
//		return sink.Bytes(), nil
//	}
//
// # Documentation
//
// In the repository: docs/tutorial.md (from go get to a remote FetchAdd),
// docs/api.md (the shape of the API), docs/memory-windows.md,
// docs/semantics.md (the contract of the API), docs/verbs.md (for verbs
// programmers), docs/extensions.md and docs/mpa.md (the wire and the
// negotiation), docs/interop.md (Linux siw), docs/architecture.md (how the
// stack is built: the protocol layers live in internal packages, one per
// protocol) and docs/spec/ (the protocols as the project reads them). The
// command cmd/iwarp has rping, perftest-compatible measurements, a decoder
// and a conformance suite (docs/cli.md).
package iwarp
