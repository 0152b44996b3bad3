// Package nvme holds the wire formats of NVMe over Fabrics on RDMA,
// without I/O: the submission and completion queue entries (NVMe Base 1.4
// §4.2, §4.6), SGL descriptors (§4.4), the status field (§4.6.1), the
// Fabrics commands and Connect data (NVMe over Fabrics 1.1 §3), controller
// properties (NVMe-oF 1.1 §3.5, NVMe Base 1.4 §3.1), Identify data
// structures (NVMe Base 1.4 §5.15), features (§5.21), log pages (§5.14,
// NVMe-oF 1.1 §5.3), the admin and NVM command fields (§5.13, §6) and the
// RDMA_CM private data of the NVMe RDMA transport binding (NVMe over
// Fabrics RDMA Transport Specification 1.0 §3.3; also NVMe-oF 1.1 §7.3).
//
// All multi-byte fields are little-endian, as NVMe defines them. Each
// structure has a Decode function (or Parse for register values) that
// checks the length of its input and never panics, and an Encode method
// that writes into a caller's buffer without allocating, so that the queue
// paths of a host or a target need not allocate per command. Field names
// are the specifications' mnemonics (CNTLID, SQSIZE, MDTS ...), so that a
// field can be found in the specification by its name.
//
// The package is shared by the NVMe-oF target and host (nvmeof/target,
// nvmeof/host); it knows nothing of queues, connections or timing.
package nvme
