// Package perftest speaks the protocol of perftest 4.5's RC programs
// (ib_write_bw, ib_send_bw, ib_read_bw, ib_write_lat, ib_send_lat,
// ib_read_lat of linux-rdma/perftest run with -R, rdma_cm) over this
// module's iWARP stack, in both roles: Client runs a test against a
// perftest server, Serve answers a perftest client. "iwarp perf
// -perftest" is its command line.
//
// Each test uses two connections to the same port. The first carries
// perftest's lock-step exchange (comm.go, msg.go): the version, the cycle
// buffer, cache line size and MTU, two all-zero records around the second
// connection's setup, the 56-byte QP records that carry each side's
// buffer, and after a bandwidth test the client's results. The second
// carries the test's data (data.go; credit.go for ib_send_bw's credits;
// drain.go for waiting until TCP has delivered the last Writes). The
// layouts follow the siw-to-siw sessions recorded in
// interop/captures/perftest.
package perftest
