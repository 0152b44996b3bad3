// Package host is an NVMe over Fabrics host on iWARP: it connects to an
// NVMe over RDMA target (Linux's nvmet-rdma over soft-iWARP, or
// nvmeof/target) as the RDMA transport binding (NVMe over Fabrics RDMA
// Transport 1.0, NVMe over Fabrics 1.1 §2-§6) says and Linux's nvme-rdma
// host does, with the public verbs API of package iwarp.
//
// Connect associates with a controller: it connects the admin queue,
// enables the controller, identifies it, and for an NVM subsystem connects
// I/O queues, each an iWARP connection of its own. Controller.Namespace
// returns a Namespace to read and write blocks (ReadAt, WriteAt, Flush,
// WriteZeroes); with the discovery NQN (nvmeof.DiscoveryNQN),
// Controller.DiscoveryLog lists the target's subsystems. Controller.Close
// shuts the controller down in order.
//
//	c, err := host.Connect(ctx, "192.0.2.1:4420", "nqn.2014-08.org.example:disk", nil)
//	if err != nil {
//		return err
//	}
//	defer c.Close(context.Background())
//	ns, err := c.Namespace(ctx, 1)
//	if err != nil {
//		return err
//	}
//	buf := make([]byte, 4096) // a whole number of ns.BlockSize() blocks
//	err = ns.ReadAt(ctx, buf, 0)
//
// # Commands
//
// Each queue has QueueSize-1 command slots (the submission queue's
// entries less one, so that the queue never overflows: NVMe over Fabrics
// §3.3.2). A slot's index is the low 12 bits of its CIDs, a generation
// the top 4. Each slot keeps a data buffer registered with remote read and
// write access, grown to the largest transfer it has carried (at most
// Config.MaxTransfer and the controller's MDTS): a read lands in it by
// the controller's RDMA Writes and is copied to the caller's buffer, a
// write is copied into it and fetched by the controller's RDMA Read, or
// sent inside the command capsule when it fits the controller's in-capsule
// data (IOCCSZ, on I/O queues). Commands name the buffer with a Keyed SGL
// Data Block (its STag and tagged offset). The copy costs a memcpy per
// I/O; in exchange the caller's memory is never registered or exposed, a
// cancelled command cannot write into it later, and the I/O path
// allocates nothing. The controller can reach the slots' buffers, and
// nothing else, as long as the association lasts.
//
// Responses arrive in receives the queue keeps posted, one per entry. A
// goroutine per queue takes the completions and wakes the command's
// goroutine; a response for a CID not outstanding, or of the wrong size,
// fails the controller (ErrProtocol). A status other than success is a
// *nvmeof.StatusError (errors.Is with its sentinels, such as
// nvmeof.ErrLBAOutOfRange).
//
// # Contexts, failures and Close
//
// Every blocking call takes a context. A call whose context has already
// ended returns its error and sends nothing. A command whose context ends
// returns the context's error at once; its slot stays out of use, with its
// buffer, until the controller answers it (or the association ends), so a
// CID is never reused while the controller may still answer it.
//
// A keep-alive goes out every KATO/2 (Config.KATO, 5 s by default) on the
// admin queue. A failed keep-alive, a queue's connection breaking, or a
// protocol violation fails the controller: every command outstanding, and
// every later call, returns an error matching ErrFailed that wraps the
// cause; Controller.Done is closed and Controller.Err says why. There is
// no reconnection: connect again.
//
// Close disconnects the I/O queues (their outstanding commands fail with
// ErrClosed), sets CC.SHN and waits for CSTS.SHST (at most 5 s), then
// disconnects the admin queue; it is bounded by its context and by its
// own step limits whatever the target does.
package host
