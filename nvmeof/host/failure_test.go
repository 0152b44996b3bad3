package host

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/nvme"
	"github.com/goiwarp/iwarp/nvmeof"
)

// readLBA is the starting block of a read, or -1 for another command.
func readLBA(qid uint16, cmd nvme.Command) int64 {
	if qid == 0 || cmd.Opcode != nvme.NVMRead {
		return -1
	}
	return int64(cmd.RW().SLBA)
}

func TestTargetDiesMidTransfer(t *testing.T) {
	ft := newFakeTarget(t, 4096)
	const n = 6
	arrived := holdReads(ft, n, nil, nil)
	c, ns := openFake(t, ft, &Config{IOQueues: 2})
	ctx := testCtx(t)
	errc := make(chan error, n)
	for i := range n {
		go func() { errc <- ns.ReadAt(ctx, make([]byte, 4096), uint64(i*8)) }()
	}
	for range n {
		<-arrived
	}
	ft.killAll()
	for range n {
		if err := <-errc; !errors.Is(err, ErrFailed) {
			t.Fatalf("outstanding read ended with %v, want ErrFailed", err)
		}
	}
	<-c.Done()
	if err := c.Err(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Err %v", err)
	}
	if err := ns.WriteAt(ctx, make([]byte, 512), 0); !errors.Is(err, ErrFailed) {
		t.Fatalf("write after the failure: %v", err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close of a failed controller: %v", err)
	}
}

// oneSlotHoldingBlock0 connects to a fake target with one I/O queue of two
// entries (a single command slot) that holds the reads of block 0 until
// release is closed, signalling held for each.
func oneSlotHoldingBlock0(t *testing.T) (ns *Namespace, release chan struct{}, held <-chan struct{}) {
	ft := newFakeTarget(t, 4096)
	release = make(chan struct{})
	held = holdReads(ft, 1, func(lba int64) bool { return lba == 0 }, release)
	_, ns = openFake(t, ft, &Config{IOQueues: 1, QueueSize: 2})
	return ns, release, held
}

func TestCancelKeepsSlotUntilAnswered(t *testing.T) {
	ns, release, held := oneSlotHoldingBlock0(t)
	ctx := testCtx(t)
	want := make([]byte, 4096)
	pattern(want, 9)
	if err := ns.WriteAt(ctx, want, 64); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	first := make([]byte, 4096)
	go func() { errc <- ns.ReadAt(cctx, first, 0) }()
	<-held
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
	// The only slot is still the cancelled command's: the next read
	// waits for it, then gets the slot and its own data.
	got := make([]byte, 4096)
	go func() { errc <- ns.ReadAt(ctx, got, 64) }()
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("the read after the cancelled one got the wrong data")
	}
	if string(first) != string(make([]byte, 4096)) {
		t.Fatal("data landed in the cancelled read's buffer")
	}
}

func TestCancelWhileWaitingForSlot(t *testing.T) {
	ns, release, held := oneSlotHoldingBlock0(t)
	ctx := testCtx(t)
	errc := make(chan error, 1)
	go func() { errc <- ns.ReadAt(ctx, make([]byte, 512), 0) }()
	<-held
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := ns.ReadAt(cctx, make([]byte, 512), 8); !errors.Is(err, context.Canceled) {
		t.Fatalf("read waiting for a slot: %v", err)
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestErrorStatus(t *testing.T) {
	ft := newFakeTarget(t, 4096)
	ft.setHook(func(qid uint16, cmd nvme.Command) fault {
		if readLBA(qid, cmd) == 7 {
			return fault{status: nvme.StatusLBAOutOfRange}
		}
		return fault{}
	})
	c, ns := openFake(t, ft, &Config{IOQueues: 1})
	ctx := testCtx(t)
	err := ns.ReadAt(ctx, make([]byte, 512), 7)
	var se *nvmeof.StatusError
	if !errors.Is(err, nvmeof.ErrLBAOutOfRange) || !errors.As(err, &se) || se.Opcode != nvme.NVMRead || se.QID != 1 {
		t.Fatalf("read answered with LBA Out of Range: %v (%+v)", err, se)
	}
	if err := ns.ReadAt(ctx, make([]byte, 512), 8); err != nil {
		t.Fatalf("the controller should still serve: %v", err)
	}
	if _, err := c.Namespace(ctx, 2); err == nil {
		t.Fatal("inactive namespace identified")
	}
}

func TestResponseForUnknownCommand(t *testing.T) {
	ft := newFakeTarget(t, 4096)
	ft.setHook(func(qid uint16, cmd nvme.Command) fault {
		if readLBA(qid, cmd) >= 0 {
			return fault{cidXor: 0x8000}
		}
		return fault{}
	})
	_, ns := openFake(t, ft, &Config{IOQueues: 1})
	if err := ns.ReadAt(testCtx(t), make([]byte, 512), 0); !errors.Is(err, ErrFailed) || !errors.Is(err, ErrProtocol) {
		t.Fatalf("read answered for another CID: %v", err)
	}
}

func TestConnectRejected(t *testing.T) {
	ft := newFakeTarget(t, 64)
	ft.reject = true
	_, err := Connect(testCtx(t), ft.addr, "nqn.2024-01.test:fake", nil)
	var rej *iwarp.RejectedError
	if !errors.Is(err, ErrRejected) || !errors.As(err, &rej) {
		t.Fatalf("Connect to a target that rejects: %v", err)
	}
}

func TestConnectIOQueueRejected(t *testing.T) {
	ft := newFakeTarget(t, 64)
	ft.rejectIO = true
	_, err := Connect(testCtx(t), ft.addr, fakeNQN, nil)
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "queue 1") {
		t.Fatalf("Connect whose I/O queue is rejected: %v", err)
	}
}

// TestConnectBoundedByContext: a target that never answers the admin
// queue's first Property Get cannot hold Connect past its context.
func TestConnectBoundedByContext(t *testing.T) {
	ft := newFakeTarget(t, 64)
	ft.setHook(func(qid uint16, cmd nvme.Command) fault {
		if cmd.Opcode == nvme.AdminFabrics && cmd.FCType() == nvme.FCTypePropertyGet {
			return fault{drop: true}
		}
		return fault{}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := Connect(ctx, ft.addr, fakeNQN, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect to a target that stops answering: %v", err)
	}
}

func TestConnectInvalidConfig(t *testing.T) {
	for _, cfg := range []*Config{{IOQueues: -1}, {QueueSize: 1}, {QueueSize: MaxQueueSize + 1}, {MaxTransfer: 1000},
		{HostNQN: string(make([]byte, 300))}} {
		if _, err := Connect(testCtx(t), "127.0.0.1:1", "nqn.x", cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

func TestDiscoveryLog(t *testing.T) {
	ft := newFakeTarget(t, 64)
	c, err := Connect(testCtx(t), ft.addr, nvmeof.DiscoveryNQN, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	ctx := testCtx(t)
	if in := c.Info(); !in.Discovery || in.IOQueues != 0 {
		t.Fatalf("info %+v", in)
	}
	log, err := c.DiscoveryLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := DiscoveryEntry{TransportType: "rdma", AddressFamily: "ipv4", SubsystemType: "nvm", PortID: 1,
		ControllerID: 0xFFFF, AdminMaxSQSize: 32, Address: "127.0.0.1", ServiceID: "4420",
		SubsystemNQN: "nqn.2024-01.test:fake"}
	if len(log) != 2 || log[0] != want || log[1].SubsystemType != "current discovery" || log[1].SubsystemNQN != nvmeof.DiscoveryNQN {
		t.Fatalf("log %+v", log)
	}
	if _, err := c.Namespace(ctx, 1); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("namespace of a discovery controller: %v", err)
	}
	ft.mu.Lock()
	kas := len(ft.kas)
	ft.mu.Unlock()
	if kas != 0 {
		t.Fatal("keep-alive sent to a discovery controller without KATO")
	}
}

func TestDiscoveryLogOfNVMSubsystem(t *testing.T) {
	ft := newFakeTarget(t, 64)
	c := connectFake(t, ft, &Config{IOQueues: 1})
	if _, err := c.DiscoveryLog(testCtx(t)); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("discovery log of an NVM subsystem: %v", err)
	}
}
