// Package verbs is the shell of the rebuilt engine (docs/engine-rebuild.md,
// step 2): it runs the sans-I/O protocol core of one queue pair
// (internal/rdmap) over a real connection, and provides the completion
// queues, shared receive queues and event channels around it.
//
// # Concurrency design
//
// A QP is an rdmap.Core, a mutex and two tokens. The mutex (QP.mu) is the
// Core's only lock: whoever holds it calls Core methods, which do bounded
// work and never block; no system call and no wait happens under it. The
// receive token and the transmit token (atomic booleans) say who moves
// octets between the socket and the Core: a goroutine takes a token by
// compare-and-swap and nobody ever waits for one. A holder releases its
// token and then looks at the Core again, taking the token back if there is
// work: whoever releases last does what was left, so no wait depends on the
// goroutine that waits.
//
// Reading: the Device's poller (internal/poll) holds every QP's socket in an
// epoll set, one-shot. When a socket is readable the poller's goroutine
// calls the QP's Ready, which takes the receive token, reads without
// blocking straight into Core.RxBuf (direct placement: the Core pins the
// registered memory from RxBuf until RxDone), pushes the completions,
// transmits what the Core wants sent, releases the token and re-arms: bytes
// that arrived meanwhile fire at once, no timer is involved. A connection
// that keeps the poller busy past a budget gets a receive goroutine of its
// own (a worker of the Device) until its socket is empty. Without a poller
// (off Linux, or DeviceConfig.NoPoll) a QP keeps a receive goroutine: on
// a connection with a descriptor it waits for the socket in the runtime's
// network poller and reads as Ready does; on one without, it reads into a
// bounce buffer, never into registered memory, and copies under the lock.
// No pin is held across a wait for the socket, with one bounded exception:
// a QP without a descriptor writes with blocking writes, which keep the
// leased octets pinned until the write returns (the write deadline or the
// connection's close ends it).
//
// A goroutine waiting for a completion (CQ.Wait on a CQ that only one QP
// feeds, or WaitFor after PostWait) that finds the receive token free
// takes it and reads the socket itself (waitread_linux.go): it reads as
// Ready does and, about to park, disarms the poller and parks in the
// runtime's network poller on the socket, so a response reaches it without a hop through another
// goroutine. Nothing depends on it for progress: a completion anyone else
// adds for it, and the end of its context, interrupt its park (a read
// deadline in the past, used for nothing else and taken back before the
// token is released); on leaving it releases the token and re-arms, so
// octets that arrive after it left fire Ready as usual. One that never
// parked re-arms only if a Ready found the token taken (QP.rxMissed).
//
// Transmitting: the goroutine that gave the Core work (a poster, the
// receiver with a Read Response) takes the transmit token and writes
// Core.TxBufs with one non-blocking writev. Only when the socket is full
// does a transmit goroutine (a worker of the Device) take over; it waits
// for the socket to become writable holding no pin, and leaves when the
// queue is empty.
//
// Teardown is bounded whatever the peer does: Close fails the Core, closes
// the socket (which ends every system call and wakes every parked
// goroutine) and waits only for the token holders' system calls to return;
// Disconnect waits for the orderly close or its context, then closes.
//
// # Ownership of mutable state
//
// Every piece of mutable state has one owner (the table of
// docs/architecture.md):
//
//	state                          owner                       who may read it            how others ask for a change
//	QP.core (SQ, RQ handle, ORQ,   holder of QP.mu             holder of QP.mu            call a method under QP.mu
//	  IRQ, MSNs, state, error)
//	QP shell flags (hold, halfClosed,  holder of QP.mu         holder of QP.mu            afterLocked decides, act performs
//	  connClosed, finished, rxOut,
//	  txOut, sqTail, waiters, timers)
//	QP.rq (own receive ring)       holder of QP.mu             holder of QP.mu            PostRecv, CQ.Poll's release
//	decoder staging, RxBuf slice,  holder of the rx token      that holder                CAS rxTok; the holder re-arms
//	  QP.rxActs, rxIOV, rxVec,
//	  rdWaiter, rdCQ, rdActs,
//	  rdDisarmed
//	QP.readerWaiting, rdPast,      QP.rdMu                     anyone (readerWaiting,     interruptReader (a completion
//	  rdCtx, rdStop, rdClosed                                    atomic)                    for the waiter, ctx's end)
//	CQ.members, shared             CQ.mu                       holder of CQ.mu            New, Close (join, leave)
//	CQ.reader                      the CQ's waiter (CAS)       anyone (atomic)            —
//	QP.tx (iovecs in flight)       holder of the tx token      that holder                CAS txTok; the holder re-checks WantTx
//	QP.hp (poller Handle)          Start (stored once)         anyone (atomic)            —
//	QP.nc, QP.rc                   Start, with QP.core         whoever saw QP.core        —
//	Device workers (idle ones)     the workers themselves      —                          run (a job to a parked worker, else a new one)
//	SRQ ring, limit                SRQ.mu                      holder of SRQ.mu           PostRecv, Take, Arm (QP.mu before SRQ.mu)
//	CQ ring, arm state             CQ.mu                       holder of CQ.mu            push, Poll, Arm (QP.mu before CQ.mu)
//	registration word (valid bit,  internal/mem, atomically    anyone                     Register, Begin*, Pin, Lease
//	  generation, pins)
//	epoll registration             internal/poll               —                          Arm, Disarm, Close
//
// Lock order: QP.mu, then SRQ.mu, then CQ.mu; none is held while taking
// one before it in this order. QP.rdMu is taken alone (it guards a read
// deadline, set outside every other lock).
package verbs
