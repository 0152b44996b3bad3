// Package nvmeof is NVMe over Fabrics on this module's iWARP verbs: the
// NVMe RDMA transport binding (NVM Express over Fabrics 1.1 and the NVMe
// over Fabrics RDMA Transport Specification) carried by RDMAP/DDP/MPA
// over TCP, in pure Go.
//
// Two subpackages do the work, on the public verbs API of package iwarp:
//
//   - nvmeof/target exports block devices as NVMe namespaces of an NVM
//     subsystem, with a discovery controller, to hosts such as Linux's
//     nvme-rdma driver (nvme connect -t rdma).
//   - nvmeof/host connects to a target, such as Linux's nvmet-rdma, as
//     an NVMe host: discovery, admin and I/O queues, reads and writes.
//
// This package holds what the two share: the well-known discovery NQN,
// the default port, and StatusError, the error of an NVMe command that
// completed with a status other than success. See docs/nvmeof.md for
// what is implemented and how to run it against Linux.
package nvmeof

// DiscoveryNQN is the NQN of discovery controllers (NVMe-oF 1.1 §5).
const DiscoveryNQN = "nqn.2014-08.org.nvmexpress.discovery"

// DefaultPort is the TCP port NVMe over Fabrics listens on by default
// (IANA "nvme-rdma"/"nvme-tcp", NVMe-oF 1.1 §7.3).
const DefaultPort = 4420
