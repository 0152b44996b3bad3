// Package mem is the memory side of the RNIC: the STag table of one device,
// registered regions with their protection domain and access rights, the
// checks a tagged placement or a remote read, atomic or invalidation must pass
// (RFC 5040 §6.4, RFC 5041 §5.2, RFC 5042), 64-bit atomics on registered
// memory (RFC 7306 §5.1), and the lifetime of registrations: generations,
// transient pins, leases and invalidation that never blocks the goroutine
// that would release what it waits for.
//
// A Table is safe for concurrent use. Checks and pins on the data path take
// no lock and allocate nothing.
//
// # Generations, pins and leases
//
//  1. A registration has a generation (Gen). It changes whenever the
//     region's STag is invalidated (local or remote invalidation), re-keyed
//     or deregistered, and never goes back. A posted WR records (region,
//     generation) and holds no pin: a posted receive or Read sink never
//     makes an invalidation wait.
//  2. Every byte moved into or out of registered memory moves under a
//     transient pin: Pin(g) for local buffers of a WR, PinRemote for a
//     peer's access by STag (the same checks and Reasons as Acquire),
//     PinLeased for bytes under a lease. A pin checks validity and
//     generation and counts itself in one compare-and-swap, so nothing can
//     be pinned at a generation that has ended. A transient pin lasts one
//     system call or one copy, never a wait on the peer.
//  3. A lease (Lease/EndLease, by a Holder) keeps a generation's bytes in
//     use across waits on the peer, where sending cannot be cut: a Read
//     Response, a Send or Write whose first FPDU was handed out. A lease
//     licenses no access by itself; each access under it takes PinLeased.
//  4. BeginInvalidate, BeginDeregister and BeginRekey never block: the
//     state word's valid bit clears, the generation moves on and the region
//     becomes invalid (valid with a new key, for a re-key) at once. From
//     then on Pin, Lease and PinRemote of the old generation or key fail.
//     The returned Invalidation drains when no transient pin and no lease of
//     the old generation or an older one remains (and no pin of Acquire).
//  5. Drain is reported without polling: Drained, Wait (ends on its context
//     or on the drain, woken by the goroutine that dropped the last pin or
//     lease: no timer) and OnDrained (each function runs exactly once, on
//     that goroutine, or at once if drained; it must not block).
//  6. Invalidation.Revoke calls Revoke on every holder of a lease of the old
//     generation or older, once per holder; from then on PinLeased fails for
//     those leases. The holder makes its stream fail and ends its leases
//     soon, without waiting for the peer and without blocking in Revoke.
//  7. The blocking calls (Deregister, Invalidate, InvalidateSTag,
//     RekeyContext) are Begin then Wait. If the context ends first they
//     revoke the lease holders, wait for the transient pins only (they
//     involve no peer) and return a *RevokedError that matches ctx.Err()
//     with errors.Is and says how many holders were revoked. The
//     registration is gone (Deregister) or invalid (Invalidate) either way;
//     when they return, no byte moves through the old registration. Rekey
//     itself does not wait (BeginRekey); RekeyContext does.
//  8. A Begin while an earlier invalidation is still draining is allowed:
//     each Invalidation waits for its own generation and all older ones, so
//     they drain in order, and traffic at the new generation never holds
//     one up (a re-key under steady traffic finishes).
//
// Acquire and Release are the engine's of before the rebuild: their pins
// carry no generation and every invalidation waits for all of them; a
// blocking call whose context ends while one is held returns a
// *RevokedError with InUse set and does not finish (call it again).
//
// # The two words
//
// A region's state word (uint32: key, valid bit, access rights) is what a
// remote check reads; its life word (uint64: valid bit, pending bit, a
// 24-bit generation and two 19-bit pin counts, one per parity of the
// generation, see word.go) is what Pin changes. Begins change both under
// the region's mutex, the state word's valid bit first, then the life word
// (generation and valid bit in one compare-and-swap), then, for a re-key,
// the new key: that order is why PinRemote (pin on the life word, then load
// the state word) never accepts an old key at a new generation. Pins of the
// generation before the previous one move to a separate count (stale) in
// the Begin that reuses their slot. Generations count modulo 2^24: a pin or
// lease held while its region changes generation 2^24 times or more would
// be miscounted (a transient pin lasts one copy or system call, a lease one
// message), and a WR posted 2^24 generation changes ago would pin again
// (the region is valid and registered then, so no memory outside a
// registration is touched). A generation holds at most 2^19-1 transient
// pins at once; one more panics (a pin leak).
package mem
