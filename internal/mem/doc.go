// Package mem is the memory side of the RNIC: the STag table of one device,
// registered regions with their protection domain and access rights, the
// checks a tagged placement or a remote read, atomic or invalidation must pass
// (RFC 5040 §6.4, RFC 5041 §5.2, RFC 5042), 64-bit atomics on registered
// memory (RFC 7306 §5.1), and the lifetime of registrations: generations,
// transient pins, leases and invalidation that never blocks the goroutine
// that would release what it waits for.
//
// A Table also holds memory windows (RFC 5040 §2; libibverbs ibv_alloc_mw,
// ibv_bind_mw), see "Memory windows" below.
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
//
// # Memory windows
//
// A memory window (Window, AllocWindow) is a table entry of its own in a
// protection domain: its own random index and an STag of the same format,
// with a random key. Once bound it exposes a range of a registered region,
// its parent, to the peer with rights of its own. The decisions, where
// RFC 5040 and libibverbs leave room:
//
//  1. Bindings. Each bind creates a binding: a *Region whose bytes are the
//     window's range of the parent's buffer and whose base is the window's
//     first TO, in the parent's TO space (the peer uses the TOs it would use
//     for the region), with state and life words, pins, leases and a
//     generation of its own. The checks and pins by a window's STag (Check,
//     Acquire, AcquireAtomic, PinRemote, CheckRemoteInvalidate,
//     CheckLocalInvalidate, Lookup) resolve to the current binding and
//     return it as the region, so the engine treats the access as it treats
//     a region's: Unpin, Lease, PinLeased, EndLease, Release and the
//     atomics are called on the binding, and Holder.Revoke receives it. A
//     binding's buffer and base never change, so the data path reads them
//     without a lock.
//  2. The window's entry is never valid and its life word never live, so
//     the region path pays nothing for windows: PinRemote, Check and the
//     invalidation checks look for a window only where a region's check
//     already failed (Acquire tests one pointer first). Through a window,
//     PinRemote pins the binding (one compare-and-swap, as for a region)
//     and then checks the parent's valid bit and the binding's state word:
//     one pointer load and one word load more than a region, no lock, no
//     allocation.
//  3. Checks and Reasons, in this order: window never bound, binding
//     unbound or invalidated, wrong key (an STag of an earlier binding) or
//     parent invalid: InvalidSTag; another protection domain:
//     NotAssociated; rights not granted by the window: AccessViolated;
//     TOWrap; outside the window (even if inside the parent): OutOfBounds;
//     an atomic's TO not 8-byte aligned: Misaligned.
//  4. Remote only. A binding's rights never include AccessLocalWrite, its
//     LocalWord reports false, and CheckLocal (an lkey's check) fails a
//     window's STag as an InvalidSTag. The engine must not take a binding
//     (Region.Window is non-nil) as the buffer of a local work request.
//  5. Bind rules (BeginBind): the parent is a registered region (not a
//     binding), not deregistered, currently valid, in the window's
//     protection domain, registered or re-keyed with AccessMWBind; the
//     range is non-empty and lies within it; the rights are among
//     AccessRemoteRead, AccessRemoteWrite and AccessRemoteAtomic (and
//     AccessRemoteInvalidate for type 2); remote write or atomic needs the
//     parent's AccessLocalWrite (libibverbs' rule); atomic needs an 8-byte
//     aligned base TO and host address. The window's rights need not be
//     among the parent's remote rights (as in libibverbs). A failed bind
//     changes nothing.
//  6. Keys. Every bind gives the window a new random key, never the one of
//     its previous STag, so the old STag fails at once. (Keys have 8 bits:
//     an STag of an older binding can name a later one, as for re-keys.)
//  7. Type 1 windows are bound and unbound by calls: a bind of a bound type
//     1 window first unbinds it (BeginBind returns the old binding's
//     Invalidation; BindContext waits for it); BeginUnbind/Unbind, or a
//     zero-length bind as in libibverbs, unbind it. They cannot be
//     invalidated: CheckLocalInvalidate and CheckRemoteInvalidate fail with
//     InvalidateNotAllowed (RDMAP "STag cannot be invalidated", a
//     protection error), BeginInvalidate refuses the binding the same way,
//     and Invalidate and InvalidateSTag return ErrWindowType1.
//  8. Type 2 windows are bound by a send work request: the engine calls
//     BeginBindAt (BeginBind that also requires the parent at the
//     generation the WR's SGE was resolved at) when the WR executes, in
//     send-queue order, after looking the window up (LookupWindow). A
//     bound type 2 window must be unbound first (ErrWindowBound, as libibverbs requires
//     a type 2 window to be invalidated before it is bound again); a
//     zero-length bind is refused. It is unbound by a Local Invalidate
//     (CheckLocalInvalidate then BeginInvalidate, needing no right) or by
//     the peer's Send with Invalidate naming its STag, which, unlike
//     libibverbs where every type 2 window may be invalidated remotely,
//     needs AccessRemoteInvalidate among the rights it was bound with: the
//     rule this stack applies to regions, so a peer cannot end a window the
//     owner did not offer. BeginUnbind also unbinds a type 2 window. The
//     window is associated with its protection domain only: the QP
//     association of InfiniBand's type 2B is not modelled here (the engine
//     may check the QP it bound through).
//  9. Lifetime of a binding. The first Begin on a binding (an unbind, a
//     rebind, a Local or Remote Invalidate, a deallocation, a Deregister of
//     the binding, or a Begin on its parent) ends it for good, by the
//     rules of generations above: the valid bit clears at once, nothing
//     can be pinned or leased on it any more, and its Invalidation drains
//     when no transient pin, lease or pin of Acquire taken through it
//     remains (rules 4 to 7). Begins never block; Unbind, BindContext and
//     DeallocWindow wait like Invalidate, and end like it when their
//     context ends (revoking the holders of leases on the binding). A
//     binding cannot be re-keyed (ErrWindowRekey); the window is bound
//     again instead.
//  10. The parent's generation. Pins and leases through a window are taken
//     on the binding, not on the parent, and that is what ties them to the
//     parent's generation: a binding is made only while the parent is valid
//     and lives within one generation of it, because every Begin on the
//     parent (invalidation, deregistration, re-key) unbinds every window
//     bound to it, under the parent's mutex and before a re-key publishes
//     the new key, and its Invalidation drains only once the unbind of each
//     of those bindings has drained, including bindings unbound earlier
//     that are still draining. Revoke and the blocking calls' end on their
//     context reach the holders of leases on those bindings and wait for
//     their transient pins; a pin of Acquire on one keeps the call from
//     finishing (InUse). An unbind waits for the window's accesses only,
//     never for the parent's own traffic, so a window's churn does not hold
//     up the parent's drains beyond its own. Unlike libibverbs, where
//     ibv_dereg_mr fails while windows are bound, deregistering the parent
//     wins and unbinds them.
//  11. Deallocation (BeginDealloc, DeallocWindow) unbinds the window and
//     takes it out of the table; its index is quarantined like a
//     deregistered region's. Binds and unbinds of a deallocated window
//     return ErrDeallocated or the deallocation's Invalidation.
//  12. Windows count with regions against TableOptions.MaxRegions; Len
//     counts regions and Windows windows. Locks are taken parent, then
//     window, then binding; a binding's drain takes its parent's mutex
//     afterwards (to leave the parent's list), never while holding its own.
package mem
