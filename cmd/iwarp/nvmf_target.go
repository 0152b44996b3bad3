package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/nvmeof"
	"github.com/goiwarp/iwarp/nvmeof/target"
)

func init() {
	register(&command{
		name:  "nvmf-target",
		short: "NVMe over Fabrics (RDMA) target: serve a file or memory as an NVMe namespace",
		run:   runNvmfTarget,
	})
}

const nvmfTargetAbout = `
Serves an NVM subsystem over iWARP, as the NVMe over Fabrics RDMA
transport binding says: one namespace (NSID 1) backed by -file (an
existing file or block device, its whole size) or by -size bytes of
memory, and a discovery controller listing the subsystem. Linux connects
with "nvme connect -t rdma -a ADDR -s PORT -n NQN" (over siw), as does
"iwarp nvmf-host". Serves until interrupted (SIGINT or SIGTERM), then
exits 0. -v logs controllers and queues coming and going.

Exit status: 0 after an interrupt, 1 when it cannot open the file or
listen, 2 for a bad flag.`

// nvmfTargetMaxSize bounds -size (memory).
const nvmfTargetMaxSize = 64 << 30

// nvmfTargetFlags are the flags of "iwarp nvmf-target".
type nvmfTargetFlags struct {
	*cmdFlags
	addr, nqn, file, size string
	port, bs, queues      int
	noCRC, verbose        bool
	sizeBytes             int64
}

func newNvmfTargetFlags(stdout, stderr io.Writer) *nvmfTargetFlags {
	f := &nvmfTargetFlags{cmdFlags: newFlags("nvmf-target", "-nqn NQN (-file PATH | -size BYTES) [options]", nvmfTargetAbout, stdout, stderr)}
	f.StringVar(&f.addr, "a", defaultHost, "listen `HOST[:PORT]`")
	f.IntVar(&f.port, "p", nvmeof.DefaultPort, "listen `PORT` (0: any free port)")
	f.StringVar(&f.nqn, "nqn", "", "the subsystem's `NQN` (required)")
	f.StringVar(&f.file, "file", "", "serve the existing file or block device at `PATH`")
	f.StringVar(&f.size, "size", "", "serve `BYTES` of memory (suffixes k, m, g)")
	f.IntVar(&f.bs, "bs", 512, "logical block size: 512 or 4096")
	f.IntVar(&f.queues, "queues", target.DefaultMaxIOQueues, "I/O queues a controller grants at most")
	f.BoolVar(&f.noCRC, "nocrc", false, "do not ask for MPA CRCs")
	f.BoolVar(&f.verbose, "v", false, "log controllers and queues")
	return f
}

// check validates the flags; it returns false after reporting one.
func (f *nvmfTargetFlags) check() bool {
	switch {
	case !noArgs(f.cmdFlags):
		return false
	case f.nqn == "":
		fmt.Fprintln(f.stderr, "iwarp nvmf-target: -nqn is required")
		return false
	case f.nqn == nvmeof.DiscoveryNQN || len(f.nqn) > 223:
		f.badFlag("nqn", f.nqn, "must be at most 223 bytes and not the discovery NQN")
		return false
	case (f.file == "") == (f.size == ""):
		fmt.Fprintln(f.stderr, "iwarp nvmf-target: give -file or -size (one of them)")
		return false
	case f.bs != 512 && f.bs != 4096:
		f.badFlag("bs", f.bs, "must be 512 or 4096")
		return false
	case !f.checkInt("queues", int64(f.queues), 1, target.MaxIOQueues):
		return false
	}
	if f.size != "" {
		n, err := parseTargetSize(f.size)
		if err != nil || n < int64(f.bs) || n > nvmfTargetMaxSize {
			f.badFlag("size", f.size, "must be a size from one block to 64g (suffixes k, m, g)")
			return false
		}
		f.sizeBytes = n
	}
	return true
}

// parseTargetSize parses a byte count with an optional k, m or g suffix
// (powers of 1024).
func parseTargetSize(s string) (int64, error) {
	mult := int64(1)
	if i := len(s) - 1; i > 0 {
		switch s[i] {
		case 'k', 'K':
			mult, s = 1<<10, s[:i]
		case 'm', 'M':
			mult, s = 1<<20, s[:i]
		case 'g', 'G':
			mult, s = 1<<30, s[:i]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, errors.New("not a size")
	}
	return n * mult, nil
}

func runNvmfTarget(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return nvmfTargetMain(ctx, args, stdout, stderr)
}

// nvmfTargetMain runs the command until ctx ends.
func nvmfTargetMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newNvmfTargetFlags(stdout, stderr)
	if code, ok := f.parse(args); !ok {
		return code
	}
	listen, ok := addrFromFlags(f.cmdFlags, f.addr, f.port)
	if !ok || !f.check() {
		return exitUsage
	}
	var backend target.Backend
	if f.file != "" {
		fb, err := target.OpenFileBackend(f.file)
		if err != nil {
			return f.fail("%v", strings.TrimPrefix(err.Error(), "nvmeof: "))
		}
		defer fb.Close()
		if fb.Size() < int64(f.bs) {
			return f.fail("%s: %d bytes, less than one %d-byte block", f.file, fb.Size(), f.bs)
		}
		backend = fb
	} else {
		mb, err := target.NewMemoryBackend(f.sizeBytes)
		if err != nil {
			return f.fail("%v", err)
		}
		backend = mb
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	tg, err := target.New(&target.Config{NQN: f.nqn, Backend: backend, BlockSize: f.bs, MaxIOQueues: f.queues,
		DisableCRC: f.noCRC, Logger: log})
	if err != nil {
		return f.fail("%v", err)
	}
	defer tg.Close()
	ln, err := iwarp.Listen("tcp", listen, nil)
	if err != nil {
		return f.fail("%v", err)
	}
	defer ln.Close()
	size := backend.Size() / int64(f.bs) * int64(f.bs)
	fmt.Fprintf(stdout, "nvmf-target: serving %s (%d bytes, %d-byte blocks) on %s\n", f.nqn, size, f.bs, ln.Addr())
	if err := tg.Serve(ctx, ln); err != nil && ctx.Err() == nil {
		return f.fail("%v", err)
	}
	return exitOK
}
