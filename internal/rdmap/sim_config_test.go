package rdmap

import (
	"fmt"
	"math/rand/v2"

	"github.com/goiwarp/iwarp/internal/fpdu"
)

// simConfig is everything a seed draws before its first step.
type simConfig struct {
	crc       bool
	markers   [2]bool // side i sends markers (side 1-i strips them)
	mulpdu    [2]int
	ird       [2]int // side i's IRD; the peer's ORD
	rfc7306   bool
	v2        bool
	sqDepth   [2]int
	rqDepth   [2]int
	maxSGE    [2]int
	maxInline [2]int
	srq       [2]bool
	firstSend [2]uint32 // the first MSN side i sends on QN 0 (2 after a Send RTR)
	firstRead [2]uint32 // and on QN 1 (2 after a Read RTR)
	txOff     [2]uint64 // the stream offset where side i's full operation begins (its markers' grid)

	pipeCap   [2]int
	maxDelay  int
	maxSeg    int
	steps     int   // action steps
	large     bool  // big regions and messages (beyond the Core's copyMax)
	opTimeout int64 // the simulated shell's op timeout, in steps

	// What the run may do beyond clean work: churn registrations that
	// posted WRs name, post work the peer may refuse, network and
	// application faults, one hostile input.
	churn bool
	risky bool
	fault simFault
	// simFaultSide, simFaultAt, simFaultLen: who, when, for how long.
	simFaultSide int
	simFaultAt   int64
	simFaultLen  int64
	hostile      *simCase
	victim       int
	hostileAt    int64
}

// forceCase makes k the run's hostile input, into an otherwise clean run
// whose configuration it adapts to the case's needs.
func (c *simConfig) forceCase(k *simCase, victim int) {
	c.churn, c.risky, c.fault = false, false, simFaultNone
	c.victim, c.hostileAt, c.hostile = victim, int64(c.steps/2), k
	h := 1 - victim
	n := k.needs
	c.crc = c.crc || n&simNeedCRC != 0
	c.markers[h] = (c.markers[h] || n&simNeedMarkers != 0) && n&simNeedNoMarkers == 0
	if n&simNeedV2 != 0 {
		c.v2, c.rfc7306 = true, true
	}
	if n&simNeedNoV2 != 0 || n&simNeedNoRFC7306 != 0 {
		c.v2 = false
	}
	if n&simNeedNoRFC7306 != 0 {
		c.rfc7306 = false
	}
	if n&simNeedFast != 0 {
		c.maxSeg, c.pipeCap = 65536, [2]int{65536, 65536}
	}
}

// simFault is a network or application fault.
type simFault uint8

const (
	simFaultNone       simFault = iota
	simFaultStopRead            // the side stops reading for simFaultLen steps
	simFaultStopReadAt          // the side stops reading for good
	simFaultDie                 // the side's process dies inside an FPDU it was sending
	simFaultReset               // the connection is reset under both sides
	simFaultAppClose            // the application closes the QP abruptly mid-run
	simFaultAppFail             // the shell fails the QP (a local socket error) mid-run
	simFaultDisconnect          // the application disconnects mid-run
	simNumFaults
)

var simFaultNames = [...]string{"none", "stop-reading-for-a-while", "stop-reading", "die-mid-FPDU", "reset", "app-Close", "shell-Fail", "app-Disconnect"}

func (f simFault) String() string { return simFaultNames[f] }

// clean reports whether the run does only what must succeed: then every
// WR must succeed with the right data, no Terminate may be sent and no op
// timeout may fire.
func (c *simConfig) clean() bool {
	return !c.churn && !c.risky && c.fault == simFaultNone && c.hostile == nil
}

// simDrawConfig draws a seed's configuration.
func simDrawConfig(rng *rand.Rand) simConfig {
	var c simConfig
	c.crc = rng.IntN(3) != 0
	c.rfc7306 = rng.IntN(4) != 0
	c.v2 = rng.IntN(3) == 0
	c.rfc7306 = c.rfc7306 || c.v2 // V2 includes RFC 7306
	mulpdus := []int{16, 40, 64, 128, 300, 512, 1024, 1460, 4096, 65000}
	for i := range 2 {
		c.markers[i] = rng.IntN(3) == 0
		c.mulpdu[i] = mulpdus[rng.IntN(len(mulpdus))]
		if rng.IntN(4) == 0 {
			c.mulpdu[i] = 14 + rng.IntN(200)
		}
		c.ird[i] = 1 + rng.IntN(8)
		c.sqDepth[i] = 2 + rng.IntN(24)
		c.rqDepth[i] = 1 + rng.IntN(24)
		c.maxSGE[i] = 1 + rng.IntN(4)
		c.maxInline[i] = []int{0, 8, 64, 256}[rng.IntN(4)]
		c.srq[i] = rng.IntN(4) == 0
		c.firstSend[i] = uint32(1 + rng.IntN(2))
		c.firstRead[i] = uint32(1 + rng.IntN(2))
		if rng.IntN(3) == 0 {
			c.txOff[i] = 4 * uint64(rng.IntN(1024)) // after an MPA exchange and RTR FPDUs
		}
		c.pipeCap[i] = []int{64, 512, 4096, 65536}[rng.IntN(4)]
		if rng.IntN(3) == 0 {
			c.pipeCap[i] = 64 + rng.IntN(8192)
		}
	}
	c.maxDelay = []int{0, 0, 1, 3, 10}[rng.IntN(5)]
	if rng.IntN(10) == 0 {
		// A pipe of a few octets: every write and read is tiny.
		c.pipeCap[rng.IntN(2)] = 1 + rng.IntN(16)
		c.maxDelay = 0
	}
	c.maxSeg = []int{7, 64, 1500, 65536}[rng.IntN(4)]
	c.steps = []int{60, 200, 400, 800}[rng.IntN(4)]
	c.large = c.maxSeg >= 1500 && min(c.pipeCap[0], c.pipeCap[1]) >= 4096 && rng.IntN(2) == 0
	c.opTimeout = 600 + 40*int64(c.maxDelay)

	// A third of the runs are clean; the others add one or more kinds of
	// trouble.
	if rng.IntN(3) != 0 {
		c.churn = rng.IntN(2) == 0
		c.risky = rng.IntN(3) == 0
		if rng.IntN(3) == 0 {
			c.fault = simFault(1 + rng.IntN(int(simNumFaults)-1))
			c.simFaultSide = rng.IntN(2)
			c.simFaultAt = int64(rng.IntN(c.steps + 1))
			c.simFaultLen = int64(1 + rng.IntN(int(c.opTimeout)*2))
		}
		if rng.IntN(4) == 0 {
			// A hostile input comes into an otherwise clean run, so that
			// the victim's answer is the case's alone.
			c.churn, c.risky, c.fault = false, false, simFaultNone
			c.victim = rng.IntN(2)
			c.hostileAt = int64(rng.IntN(c.steps + 1))
			c.hostile = simPickCase(rng, &c)
		}
	}
	return c
}

func (c simConfig) String() string {
	s := fmt.Sprintf("large=%v crc=%v markers=%v mulpdu=%v ird=%v rfc7306=%v v2=%v sq=%v rq=%v sge=%v inline=%v srq=%v firstSend=%v firstRead=%v txOff=%v pipe=%v delay<=%d seg<=%d steps=%d timeout=%d churn=%v risky=%v",
		c.large, c.crc, c.markers, c.mulpdu, c.ird, c.rfc7306, c.v2, c.sqDepth, c.rqDepth, c.maxSGE, c.maxInline, c.srq,
		c.firstSend, c.firstRead, c.txOff, c.pipeCap, c.maxDelay, c.maxSeg, c.steps, c.opTimeout, c.churn, c.risky)
	if c.fault != simFaultNone {
		s += fmt.Sprintf(" fault=%v side=%s at=%d len=%d", c.fault, simSideName(c.simFaultSide), c.simFaultAt, c.simFaultLen)
	}
	if c.hostile != nil {
		s += fmt.Sprintf(" hostile=%s victim=%s at=%d", c.hostile.name, simSideName(c.victim), c.hostileAt)
	}
	return s
}

// framing returns side i's framing options.
func (c *simConfig) framing(i int) fpdu.Options {
	return fpdu.Options{CRC: c.crc, SendMarkers: c.markers[i], RecvMarkers: c.markers[1-i]}
}

// params returns side i's negotiated parameters.
func (c *simConfig) params(i int) Params {
	return Params{
		IRD: c.ird[i], ORD: c.ird[1-i], MULPDU: c.mulpdu[i],
		FirstSendMSN: c.firstSend[i], FirstReadMSN: c.firstRead[i],
		FirstPeerSendMSN: c.firstSend[1-i], FirstPeerReadMSN: c.firstRead[1-i],
		RFC7306: c.rfc7306, V2: c.v2,
	}
}
