package perf

import (
	"time"

	"github.com/goiwarp/iwarp/internal/bench"
)

// Result is one measured test, as printed and as JSON.
type Result struct {
	Op        string  `json:"op"`
	Mode      string  `json:"mode"`      // "bw" or "lat"
	Transport string  `json:"transport"` // "iwarp" or "tcp"
	CRC       bool    `json:"crc"`
	Size      int     `json:"size"`
	QPs       int     `json:"qps"`
	Depth     int     `json:"depth"`
	MULPDU    int     `json:"mulpdu,omitempty"` // the largest ULPDU the client sent at the end (FPDU-size policy)
	Ops       uint64  `json:"ops"`
	Seconds   float64 `json:"seconds"`
	MBps      float64 `json:"mb_per_s"`   // 10^6 bytes per second
	MsgRate   float64 `json:"msgs_per_s"` // operations per second
	// Lat holds the round-trip times of a latency test, in microseconds.
	Lat *bench.Latency `json:"latency_us,omitempty"`
	// CPU seconds of both processes during the test, and per 10^9 bytes.
	ClientCPU   float64 `json:"client_cpu_s"`
	ServerCPU   float64 `json:"server_cpu_s"`
	CPUSecPerGB float64 `json:"cpu_s_per_gb,omitempty"`
	// Heap allocations per operation in each process (steady state: the
	// client counts after a warm-up, the server from its accept).
	ClientAllocsPerOp float64 `json:"client_allocs_per_op"`
	ServerAllocsPerOp float64 `json:"server_allocs_per_op"`
	ServerRecvs       uint64  `json:"server_recvs"`
	SeqErrors         uint64  `json:"seq_errors"`
}

// setRates fills the rates from the operations and the time they took.
func (r *Result) setRates(d time.Duration) {
	r.Seconds = d.Seconds()
	if r.Seconds <= 0 {
		return
	}
	r.MsgRate = float64(r.Ops) / r.Seconds
	r.MBps = float64(r.Ops) * float64(r.Size) / r.Seconds / 1e6
}

// setCPU fills the CPU and allocation columns from the two processes'
// counters before and after.
func (r *Result) setCPU(before, after, srvBefore, srvAfter sysSnapshot) {
	r.ClientCPU = float64(after.cpuNS-before.cpuNS) / 1e9
	if srvAfter.cpuNS >= srvBefore.cpuNS {
		r.ServerCPU = float64(srvAfter.cpuNS-srvBefore.cpuNS) / 1e9
	}
	r.setPerGB(r.Ops)
	if r.Ops > 0 {
		r.ClientAllocsPerOp = float64(after.mallocs-before.mallocs) / float64(r.Ops)
		base := srvBefore.mallocs
		if srvAfter.base != 0 {
			base = srvAfter.base // the server's count once set up
		}
		if srvAfter.mallocs >= base {
			r.ServerAllocsPerOp = float64(srvAfter.mallocs-base) / float64(r.Ops)
		}
	}
}

// setPerGB sets CPUSecPerGB: the client's CPU time over the bytes of the
// operations counted, plus the server's over the bytes of serverOps, the
// operations its counters cover (a bandwidth test's server counts from
// its accept, its warm-up included).
func (r *Result) setPerGB(serverOps uint64) {
	r.CPUSecPerGB = 0
	if r.Ops > 0 && serverOps > 0 && r.Size > 0 {
		gb := func(ops uint64) float64 { return float64(ops) * float64(r.Size) / 1e9 }
		r.CPUSecPerGB = r.ClientCPU/gb(r.Ops) + r.ServerCPU/gb(serverOps)
	}
}
