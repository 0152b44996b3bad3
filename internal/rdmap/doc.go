// Package rdmap is the protocol core of one queue pair: the RDMAP (RFC
// 5040, RFC 7306, the V2 draft) and DDP (RFC 5041) state of one stream,
// with no I/O. It holds the send queue and its progress, the receive
// queue (or a shared one's handle), the outstanding Reads and atomics in
// both directions, the MSNs, every validation of docs/spec with the
// Terminate each violation earns (docs/wire.md), placement, completion
// order and the QP state. It starts no goroutine, opens no socket, reads
// no clock and takes no lock; one goroutine at a time drives it (the
// shell's lock), and no call blocks.
//
// # Driving a Core
//
// The shell moves octets and time; the Core decides everything else:
//
//   - Work: PostSend and PostRecv validate and queue; Disconnect, Close
//     and Fail change the state. Poll returns the completions that are
//     ready (each accepted work request completes exactly once, in order
//     per queue); ReleaseSend and ReleaseRecv free a queue slot once its
//     completion was consumed.
//   - Receive: RxBuf returns where the next received octets go; the shell
//     reads into it (outside its lock, holding its receive token) and
//     calls RxDone with the count, even 0, before the next RxBuf. RxEOF
//     reports the end of the stream.
//   - Transmit: TxBufs appends iovecs to write; the shell writes them and
//     calls TxDone with the count written, even 0, before the next
//     TxBufs. WantTx says whether TxBufs has anything.
//   - After any call, the shell looks at WantTx (transmit), Poll
//     (completions), WantHalfClose and WantClose (shutdown), and Waiting
//     and Progress (its operation timeout, which runs only while Waiting
//     and calls Fail when Progress stops).
//
// # Shutdown
//
// A violation in the peer's stream moves the QP to TERMINATE: the
// Terminate goes out at the next FPDU boundary, input is drained
// (RxBuf hands out scratch), and once the Terminate was written
// WantHalfClose asks the shell to half-close; the drain ends with RxEOF or
// with the shell's drain timer (then Close). The peer's Terminate makes
// WantClose true at once. Disconnect drains the send queue and the
// peer's requests, then WantHalfClose; the peer's close (RxEOF) ends it.
// ERROR (Close, Fail, RxEOF, a local protection error) flushes every
// outstanding work request once; WantClose is then true and the shell
// closes the connection.
//
// # Memory
//
// A posted work request records (region, generation) for each SGE and
// holds no pin. Every octet moved into or out of registered memory moves
// under a transient pin (mem.Region.Pin, Table.PinRemote) held for one
// copy or one buffer handed out by RxBuf or TxBufs, or, for outbound
// octets the Encoder references across waits on the peer (a Read
// Response, a Send or Write larger than one copied FPDU), under a lease
// (mem.Region.Lease) that ends once TxDone consumed them, each access
// still bracketed by PinLeased. A region invalidated, deregistered or
// re-keyed after the work request was posted fails the pin: the work
// request completes with rdma.StatusLocalProtection, touches nothing, and the
// QP moves to ERROR, as verbs does; a Write target invalidated during a
// segment is refused with Terminate DDP/1/0x00. Invalidations (Send with
// Invalidate, Local Invalidate, Read with Invalidate) begin at once and
// never wait: the completion is deferred until the invalidation drained
// (Config.Wake tells the shell when). A revoked lease (mem.Holder.Revoke)
// fails the QP.
//
// # Ordering
//
// Responses to the peer's requests go out in request order, before the
// send queue's messages, at message boundaries. An atomic runs when its
// turn in that order comes: after every earlier Read Response has been
// generated (RFC 7306 §7: its last octet copied into the Encoder, or
// consumed by TxDone when referenced), so a Read followed by an atomic on
// the same word returns the value before the atomic. A Fence makes a work
// request wait until every earlier Read and atomic completed (RFC 5040
// §5.5).
package rdmap
