package engine

import (
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/leakcheck"
	"github.com/goiwarp/iwarp/internal/mem"
)

// FuzzEngineReceive feeds arbitrary bytes, as the peer's stream after a
// completed startup, into a QP with registered memory and posted receives.
// The first input byte picks the variant (CRC, V2, RFC 7306). Whatever the
// input, the QP must not panic, must tear down within a bounded time once
// the stream ends, must never write outside its registered regions (the
// canaries around them stay intact), and must flush every posted WR, and must leave no goroutine of its own running.
func FuzzEngineReceive(f *testing.F) {
	frame := func(u []byte) []byte { // an FPDU without CRC
		b := binary.BigEndian.AppendUint16(nil, uint16(len(u)))
		b = append(b, u...)
		b = append(b, make([]byte, fpdu.PadLen(len(u)))...)
		return append(b, 0, 0, 0, 0)
	}
	seeds := [][]byte{
		frame(cat(tagged(0, true, 0x100, 0x1000), []byte("written"))),
		frame(cat(untagged(3, true, 0, 0, 1, 0), []byte("a send"))),
		frame(cat(untagged(1, true, 0, 1, 1, 0), readReqHdr(0x200, 0, 16, 0x100, 0x1000))),
		frame(cat(untagged(8, true, 0, 0, 1, 0), []byte{1, 2, 3, 4, 5, 6, 7, 8})),
		frame(cat(untaggedV2(0x13, false, 0, 0, 1, 0), []byte("hi"))),
		frame(cat(untaggedV2(0x11, true, 0, 1, 1, 0), []byte{0, 0, 0, 8, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x10, 0})),
		frame(cat(untagged(7, true, 0, 2, 1, 0), []byte{0x12, 0x01, 0xc0, 0x00})),
		frame(cat(untagged(2, true, 0, 3, 1, 0), make([]byte, 12))),
	}
	atomic := untagged(0xA, true, 0, 1, 1, 0)
	atomic = binary.BigEndian.AppendUint32(atomic, 0)
	atomic = binary.BigEndian.AppendUint32(atomic, 1)
	atomic = binary.BigEndian.AppendUint32(atomic, 0x100)
	atomic = binary.BigEndian.AppendUint64(atomic, 0x1000)
	atomic = append(atomic, make([]byte, 32)...)
	seeds = append(seeds, frame(atomic))
	for v := byte(0); v < 4; v++ {
		for _, s := range seeds {
			f.Add(append([]byte{v}, s...))
		}
		f.Add(append([]byte{v}, cat(seeds[0], seeds[1], seeds[2])...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		variant, stream := data[0], data[1:]
		fuzzOnce(t, variant, stream)
	})
}

func fuzzOnce(t *testing.T, variant byte, stream []byte) {
	ca, cb := net.Pipe()
	defer cb.Close()
	// Deterministic STags: index 1 key 0 (0x100) for the target, then
	// index 2 key 0 (0x200) for the receive buffers.
	seq := []uint32{1, 0, 2, 0, 3, 0}
	table := mem.NewTable(mem.TableOptions{Random: func() uint32 {
		if len(seq) == 0 {
			return 0x7777
		}
		v := seq[0]
		seq = seq[1:]
		return v
	}})
	scq, rcq := NewCQ(16, nil), NewCQ(16, nil)
	qp, err := New(Config{Table: table, PD: 1, SendCQ: scq, RecvCQ: rcq, SQDepth: 8, RQDepth: 8, MaxSGE: 2,
		MaxInline: 16, OpTimeout: 500 * time.Millisecond, DrainTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const canary = 64
	w := make([]uint64, (canary*2+4096)/8)
	all := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), canary*2+4096)
	for i := range all {
		all[i] = 0xCA
	}
	if _, err := table.Register(1, all[canary:canary+4096], mem.AccessRemoteWrite|mem.AccessRemoteRead|mem.AccessRemoteAtomic|mem.AccessLocalWrite, 0x1000); err != nil {
		t.Fatal(err)
	}
	rb := make([]byte, canary*2+64)
	for i := range rb {
		rb[i] = 0xCA
	}
	rr, err := table.Register(1, rb[canary:canary+64], mem.AccessLocalWrite, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{{Region: rr, Len: 32}}}, {ID: 2, SGL: []SGE{{Region: rr, Off: 32, Len: 32}}}}); err != nil {
		t.Fatal(err)
	}
	p := Params{IRD: 2, ORD: 2, MULPDU: 512, RFC7306: variant&1 != 0, V2: variant&2 != 0}
	if err := qp.Start(fpdu.NewConn(ca, fpdu.Options{CRC: variant&4 != 0}), p); err != nil {
		t.Fatal(err)
	}
	// The peer: write the stream, read whatever comes back, then close.
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := cb.Read(buf); err != nil {
				return
			}
		}
	}()
	_ = cb.SetWriteDeadline(time.Now().Add(2 * time.Second))
	_, _ = cb.Write(stream)
	cb.Close()
	select {
	case <-qp.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("QP did not tear down after the stream ended (state %v)", qp.State())
	}
	for i := 0; i < canary; i++ {
		if all[i] != 0xCA || all[len(all)-1-i] != 0xCA || rb[i] != 0xCA || rb[len(rb)-1-i] != 0xCA {
			t.Fatal("a byte was written outside the registered regions")
		}
	}
	// Every posted receive completed (successfully or flushed), once.
	var out [4]CQE
	if n := rcq.Poll(out[:]); n != 2 {
		t.Fatalf("%d receive completions, want 2", n)
	}
	// Every goroutine the QP started has exited (inputs run one at a time
	// in a fuzz worker, so any engine goroutine left is this input's).
	if bad := leakcheck.Leaked(2*time.Second, "iwarp/internal/engine.(*QP)"); len(bad) > 0 {
		t.Fatalf("%d QP goroutines still running after teardown:\n%s", len(bad), strings.Join(bad, "\n\n"))
	}
}
