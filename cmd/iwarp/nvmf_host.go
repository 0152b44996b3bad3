package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/goiwarp/iwarp/nvmeof/host"
)

func init() {
	register(&command{
		name:  "nvmf-host",
		short: "NVMe over Fabrics (RDMA) host: identify, discover, verify, or load a target",
		run:   runNvmfHost,
	})
}

// nvmfDefaultPort is NVMe over RDMA's port (4420).
const nvmfDefaultPort = 4420

// nvmfDiscoveryNQN is the discovery controllers' well-known NQN.
const nvmfDiscoveryNQN = "nqn.2014-08.org.nvmexpress.discovery"

const nvmfHostAbout = `
Connects to an NVMe over Fabrics controller over iWARP (Linux's
nvmet-rdma, "iwarp nvmf-target") as the RDMA transport binding says and
Linux's host does. Without -verify or -rw it prints what the controller
and namespace -ns report; with -nqn the discovery NQN (the default) it
prints the discovery log. -verify N writes N blocks of a pattern distinct
per block and per run from block -lba on, reads them back and compares.
-rw runs a load for -d, fio-style: -qd commands in flight spread over
the I/O queues, each of -bs bytes, then a summary line such as
"read: IOPS=12.3k, BW=48.1MiB/s (50.4MB/s)(481MiB/10001msec)" and the
latencies.

Exit status: 0 when it did what was asked (and -verify found every block
intact), 1 when the connection, a command or the comparison failed, 2 for
a bad flag.`

// nvmfHostFlags are the flags of "iwarp nvmf-host".
type nvmfHostFlags struct {
	*cmdFlags
	addr, nqn, hostNQN, rw, bs, cpuProfile string
	port, queues, qsize, ns                int
	verify, qd                             int
	lba                                    uint64
	dur, timeout                           time.Duration
	noCRC                                  bool
	bsBytes                                int
}

func newNvmfHostFlags(stdout, stderr io.Writer) *nvmfHostFlags {
	f := &nvmfHostFlags{cmdFlags: newFlags("nvmf-host", "[options]", nvmfHostAbout, stdout, stderr)}
	f.StringVar(&f.addr, "a", defaultHost, "the target's `HOST[:PORT]`")
	f.IntVar(&f.port, "p", nvmfDefaultPort, "the target's `PORT`")
	f.StringVar(&f.nqn, "nqn", nvmfDiscoveryNQN, "the subsystem `NQN` to connect to")
	f.StringVar(&f.hostNQN, "hostnqn", "", "this host's `NQN` (default nqn.2014-08.org.nvmexpress:uuid:<a UUID made per run>)")
	f.IntVar(&f.queues, "queues", 0, "I/O queues to ask for (default min(CPUs, 4))")
	f.IntVar(&f.qsize, "qsize", host.DefaultQueueSize, "entries of each I/O queue")
	f.BoolVar(&f.noCRC, "nocrc", false, "do not ask for MPA CRCs")
	f.IntVar(&f.ns, "ns", 1, "the namespace `NSID` to identify, verify or load")
	f.IntVar(&f.verify, "verify", 0, "write `N` blocks of a pattern, read them back and compare")
	f.Uint64Var(&f.lba, "lba", 0, "-verify: the first `block`")
	f.StringVar(&f.rw, "rw", "", "run a load: read, write, randread or randwrite")
	f.StringVar(&f.bs, "bs", "4k", "-rw: bytes per I/O (a multiple of the block size; suffixes k, m)")
	f.IntVar(&f.qd, "qd", 32, "-rw: I/Os in flight")
	f.DurationVar(&f.dur, "d", 10*time.Second, "-rw: how long the load runs")
	f.StringVar(&f.cpuProfile, "cpuprofile", "", "-rw: write a CPU profile of the load to `FILE`")
	f.DurationVar(&f.timeout, "timeout", 10*time.Second, "bound `D` on connecting (and on each step outside the load)")
	return f
}

// check validates the flags; it returns false after reporting one.
func (f *nvmfHostFlags) check() bool {
	switch {
	case f.NArg() > 0:
		fmt.Fprintf(f.stderr, "iwarp nvmf-host: unexpected argument %q\n", f.Arg(0))
		return false
	case !f.checkInt("queues", int64(f.queues), 0, 64),
		!f.checkInt("qsize", int64(f.qsize), 2, host.MaxQueueSize),
		!f.checkInt("ns", int64(f.ns), 1, 0xFFFFFFFE),
		!f.checkInt("verify", int64(f.verify), 0, 1<<20),
		!f.checkInt("qd", int64(f.qd), 1, 4096):
		return false
	case f.verify > 0 && f.rw != "":
		f.badFlag("verify", f.verify, "give -verify or -rw, not both")
		return false
	case f.dur <= 0:
		f.badFlag("d", f.dur, "must be positive")
		return false
	case f.timeout <= 0:
		f.badFlag("timeout", f.timeout, "must be positive")
		return false
	}
	if f.rw != "" {
		if _, ok := nvmfLoadKinds[f.rw]; !ok {
			f.badFlag("rw", f.rw, "must be read, write, randread or randwrite")
			return false
		}
	}
	n, err := parseSize(f.bs)
	if err != nil || n < 512 || n > 16<<20 {
		f.badFlag("bs", f.bs, "must be a size from 512 to 16m (suffixes k, m)")
		return false
	}
	f.bsBytes = n
	return true
}

// parseSize parses a byte count with an optional k or m suffix (powers of
// 1024, as fio's).
func parseSize(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(strings.ToLower(s), "k"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(strings.ToLower(s), "m"):
		mult, s = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > math.MaxInt/mult {
		return 0, errors.New("not a size")
	}
	return n * mult, nil
}

func runNvmfHost(args []string, stdout, stderr io.Writer) int {
	f := newNvmfHostFlags(stdout, stderr)
	if code, ok := f.parse(args); !ok {
		return code
	}
	if !f.check() {
		return exitUsage
	}
	addr, err := hostPort(f.addr, f.port, flagSet(f.FlagSet, "p"))
	if err != nil {
		return f.badFlag("a", f.addr, "%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	c, err := host.Connect(cctx, addr, f.nqn, &host.Config{HostNQN: f.hostNQN, IOQueues: f.queues,
		QueueSize: f.qsize, DisableCRC: f.noCRC})
	if err != nil {
		return f.fail("connect to %s (%s): %v", addr, f.nqn, err)
	}
	code := f.run(ctx, c)
	sctx, scancel := context.WithTimeout(context.Background(), f.timeout)
	defer scancel()
	if err := c.Close(sctx); err != nil && code == exitOK {
		return f.fail("close: %v", err)
	}
	return code
}

// run does what the flags ask with a connected controller.
func (f *nvmfHostFlags) run(ctx context.Context, c *host.Controller) int {
	if c.Info().Discovery {
		if f.verify > 0 || f.rw != "" {
			return f.fail("%s is a discovery controller: no namespaces to verify or load", f.nqn)
		}
		return f.discover(ctx, c)
	}
	sctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	ns, err := c.Namespace(sctx, uint32(f.ns))
	if err != nil {
		return f.fail("namespace %d: %v", f.ns, err)
	}
	switch {
	case f.verify > 0:
		return f.runVerify(ctx, ns)
	case f.rw != "":
		return f.runLoad(ctx, c, ns)
	}
	printController(f.stdout, c.Info())
	in := ns.Info()
	fmt.Fprintf(f.stdout, "namespace %d: %d blocks of %d bytes (%s), capacity %d blocks\n",
		in.ID, in.Blocks, in.BlockSize, binarySize(float64(in.Blocks)*float64(in.BlockSize)), in.Capacity)
	return exitOK
}

// printController prints what a controller reported.
func printController(w io.Writer, in host.ControllerInfo) {
	mdts := "no limit"
	if in.MaxDataTransfer > 0 {
		mdts = binarySize(float64(in.MaxDataTransfer))
	}
	fmt.Fprintf(w, "controller: model %q, serial %q, firmware %q, NVMe %s, cntlid %d\n",
		in.ModelNumber, in.SerialNumber, in.FirmwareRevision, in.Version, in.ControllerID)
	fmt.Fprintf(w, "subsystem %s: %d namespaces, MDTS %s, in-capsule data %d bytes, %d I/O queues of %d entries\n",
		in.SubsystemNQN, in.Namespaces, mdts, in.InCapsuleData, in.IOQueues, in.QueueSize)
}

// discover prints the discovery log, as nvme-cli's discover does.
func (f *nvmfHostFlags) discover(ctx context.Context, c *host.Controller) int {
	sctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	log, err := c.DiscoveryLog(sctx)
	if err != nil {
		return f.fail("discovery log: %v", err)
	}
	fmt.Fprintf(f.stdout, "Discovery Log Number of Records %d\n", len(log))
	for i, e := range log {
		fmt.Fprintf(f.stdout, "=====Discovery Log Entry %d======\n", i)
		fmt.Fprintf(f.stdout, "trtype:  %s\nadrfam:  %s\nsubtype: %s\nportid:  %d\ntrsvcid: %s\nsubnqn:  %s\ntraddr:  %s\n",
			e.TransportType, e.AddressFamily, e.SubsystemType, e.PortID, e.ServiceID, e.SubsystemNQN, e.Address)
	}
	return exitOK
}

// runVerify writes -verify blocks of a pattern from -lba on, reads them
// back and compares.
func (f *nvmfHostFlags) runVerify(ctx context.Context, ns *host.Namespace) int {
	bs := ns.BlockSize()
	n := uint64(f.verify)
	if f.lba >= ns.Blocks() || n > ns.Blocks()-f.lba {
		return f.fail("-verify %d from block %d: the namespace has %d blocks", n, f.lba, ns.Blocks())
	}
	var run [8]byte
	rand.Read(run[:])
	const batch = 256 // blocks per ReadAt and WriteAt
	w, r := make([]byte, batch*bs), make([]byte, batch*bs)
	for done := uint64(0); done < n; done += batch {
		m := min(batch, n-done)
		fillPattern(w[:int(m)*bs], bs, f.lba+done, run)
		if err := ns.WriteAt(ctx, w[:int(m)*bs], f.lba+done); err != nil {
			return f.fail("write of blocks %d-%d: %v", f.lba+done, f.lba+done+m-1, err)
		}
	}
	for done := uint64(0); done < n; done += batch {
		m := min(batch, n-done)
		if err := ns.ReadAt(ctx, r[:int(m)*bs], f.lba+done); err != nil {
			return f.fail("read of blocks %d-%d: %v", f.lba+done, f.lba+done+m-1, err)
		}
		fillPattern(w[:int(m)*bs], bs, f.lba+done, run)
		for i := range int(m) * bs {
			if r[i] != w[i] {
				return f.fail("block %d, byte %d: read %#02x, wrote %#02x", f.lba+done+uint64(i/bs), i%bs, r[i], w[i])
			}
		}
	}
	fmt.Fprintf(f.stdout, "verify: %d blocks of %d bytes from block %d written, read back and compared: all match\n", n, bs, f.lba)
	return exitOK
}

// fillPattern fills p, blocks of bs bytes from block lba on, with a pattern
// distinct per block and per run: each 8-byte word holds the block number
// and the word's index mixed with the run's random bytes.
func fillPattern(p []byte, bs int, lba uint64, run [8]byte) {
	seed := uint64(run[0]) | uint64(run[1])<<8 | uint64(run[2])<<16 | uint64(run[3])<<24 |
		uint64(run[4])<<32 | uint64(run[5])<<40 | uint64(run[6])<<48 | uint64(run[7])<<56
	for i := 0; i+8 <= len(p); i += 8 {
		v := (lba+uint64(i/bs))*0x9E3779B97F4A7C15 ^ uint64(i%bs)*0xBF58476D1CE4E5B9 ^ seed
		for k := range 8 {
			p[i+k] = byte(v >> (8 * k))
		}
	}
}

// binarySize formats a byte count with binary units.
func binarySize(n float64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", n/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", n/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2f KiB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f B", n)
}
