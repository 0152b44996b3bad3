// Package target is an NVMe over Fabrics target on iWARP: an NVM
// subsystem with one namespace (NSID 1) on a Backend, and a discovery
// controller, served over the NVMe RDMA transport binding (NVM Express
// over Fabrics 1.1, NVM Express RDMA Transport 1.0) with the public verbs
// API of package iwarp. Linux's nvme-rdma host (over siw) and
// nvmeof/host connect to it.
//
//	be, _ := target.NewMemoryBackend(1 << 30)
//	tg, err := target.New(&target.Config{NQN: "nqn.2024-01.org.example:disk", Backend: be})
//	if err != nil {
//		return err
//	}
//	defer tg.Close()
//	ln, err := iwarp.Listen("tcp", "0.0.0.0:4420", nil)
//	if err != nil {
//		return err
//	}
//	defer ln.Close()
//	return tg.Serve(ctx, ln)
//
// Each queue is one iWARP connection, served by one goroutine. Its
// connection request carries the RDMA_CM private data (QID, queue sizes),
// which the target checks before it accepts. Commands arrive as Sends;
// their data comes in the capsule or by RDMA Read of the host's memory a
// keyed SGL names, and goes to the host by RDMA Write; each response is a
// Send, a Send with Invalidate when the host asked for its key to be
// invalidated. An admin queue's Connect makes a controller (the dynamic
// model); I/O queues' Connects name it. A controller whose host sends
// nothing on its admin queue for the keep-alive timeout, nor on its I/O
// queues since the timer last expired, is torn down.
//
// Every command a host can send gets the status the specifications name
// for it; a host that breaks the transport (a capsule too short to hold a
// command, memory it does not have) loses that queue's connection, and
// the other queues and controllers go on. docs/nvmeof.md lists what is
// implemented, with the sections of the specifications, and what is not.
package target
