package iwarp_test

// RFC 7306 ordering rules (§5.4, the ordering table of §7, §6.4) and the
// remaining RFC 7306 behaviours, checked through the public API over
// loopback. Each test is named after the rule it checks. Memory touched by
// one-sided operations is only read after a completion (or QP.Done) that
// orders it, or through the MR's atomic accessors (docs/semantics.md
// rule 2), so -race checks the orderings too.

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/goiwarp/iwarp"
)

// nextOK waits for the next completion of ep's CQ and fails the test unless
// it succeeded.
func nextOK(t *testing.T, ep *endpoint) iwarp.Completion {
	t.Helper()
	c, err := ep.cq.Next(ctx10(t))
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != iwarp.StatusSuccess {
		t.Fatalf("completion %+v", c)
	}
	return c
}

// TestOrderingAtomicAfterWriteSeesWrite: an Atomic Request is processed
// only after every earlier message on the stream was placed (RFC 7306 §5.4,
// §7: Write then Atomic), so a FetchAdd posted right after a Write of its
// target word finds the written value. The Write is 64 KiB with the word at
// its end, so it spans several FPDUs.
func TestOrderingAtomicAfterWriteSeesWrite(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	const size = 64 << 10
	target, err := b.pd.RegisterMemory(alignedBuf(size), iwarp.AccessRemoteWrite|iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	word, _ := target.RemoteSlice(size-8, 8)
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(i * 7)
	}
	smr, _ := a.pd.RegisterMemory(src, 0)
	const rounds = 20
	var last uint64
	for r := 0; r < rounds; r++ {
		last = 0x0102030405060708 * uint64(r+1)
		// The source is only rewritten once the previous round's Write has
		// completed (its completion precedes the FetchAdd's).
		binary.NativeEndian.PutUint64(src[size-8:], last)
		if err := a.qp.PostSend(
			iwarp.SendWR{ID: 1, Op: iwarp.OpWrite, Flags: iwarp.Signaled, SGL: []iwarp.SGE{smr.SGE(0, size)}, Remote: target.Remote()},
			iwarp.SendWR{ID: 2, Op: iwarp.OpFetchAdd, Flags: iwarp.Signaled, Remote: word, Add: 5},
		); err != nil {
			t.Fatal(err)
		}
		if c := nextOK(t, a); c.ID != 1 || c.Op != iwarp.OpWrite {
			t.Fatalf("round %d: first completion %+v", r, c)
		}
		c := nextOK(t, a)
		if c.ID != 2 || c.Op != iwarp.OpFetchAdd {
			t.Fatalf("round %d: second completion %+v", r, c)
		}
		if c.Original != last {
			t.Fatalf("round %d: FetchAdd found %#x, want the written %#x", r, c.Original, last)
		}
	}
	// Only now, with no Write left in flight, does the owner look: its
	// atomic load is ordered after the last FetchAdd's atomic update.
	if got, _ := target.AtomicLoad(size - 8); got != last+5 {
		t.Fatalf("target holds %#x, want %#x", got, last+5)
	}
}

// TestOrderingReadAfterAtomicSeesResult: a Read Request posted after an
// Atomic Request is answered after the atomic ran (both on QN 1, processed
// in order), so it reads the atomic's result.
func TestOrderingReadAfterAtomicSeesResult(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	buf := alignedBuf(8)
	binary.NativeEndian.PutUint64(buf, 1000) // written before registration
	target, err := b.pd.RegisterMemory(buf, iwarp.AccessRemoteRead|iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 16
	sink, _ := a.pd.RegisterMemory(make([]byte, 8*rounds), iwarp.AccessLocalWrite)
	want := uint64(1000)
	for r := 0; r < rounds; r++ {
		add := uint64(r*r + 1)
		if err := a.qp.PostSend(
			iwarp.SendWR{ID: 1, Op: iwarp.OpFetchAdd, Flags: iwarp.Signaled, Remote: target.Remote(), Add: add},
			iwarp.SendWR{ID: 2, Op: iwarp.OpRead, Flags: iwarp.Signaled, SGL: []iwarp.SGE{sink.SGE(8*r, 8)}, Remote: target.Remote()},
		); err != nil {
			t.Fatal(err)
		}
		if c := nextOK(t, a); c.ID != 1 || c.Original != want {
			t.Fatalf("round %d: FetchAdd %+v, want original %d", r, c, want)
		}
		want += add
		if c := nextOK(t, a); c.ID != 2 {
			t.Fatalf("round %d: second completion %+v", r, c)
		}
		if got := binary.NativeEndian.Uint64(sink.Bytes()[8*r:]); got != want {
			t.Fatalf("round %d: Read saw %d, want the FetchAdd's result %d", r, got, want)
		}
	}
}

// TestOrderingSendAfterAtomicSeesResult: the receiver's completion of a
// Send posted after an atomic comes after the atomic updated the target
// (the responder runs the atomic when the request is delivered, before it
// processes the later Send), so the receiver's atomic load sees the result.
func TestOrderingSendAfterAtomicSeesResult(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	target, err := b.pd.RegisterMemory(alignedBuf(16), iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	counter, _ := target.RemoteSlice(0, 8)
	lock, _ := target.RemoteSlice(8, 8)
	const rounds = 16
	for r := 0; r < rounds; r++ {
		if err := b.qp.PostRecv(iwarp.RecvWR{ID: uint64(r)}); err != nil {
			t.Fatal(err)
		}
	}
	for r := 0; r < rounds; r++ {
		// A FetchAdd and a CompareSwap, both unsignaled, then a Send.
		if err := a.qp.PostSend(
			iwarp.SendWR{ID: 1, Op: iwarp.OpFetchAdd, Remote: counter, Add: 3},
			iwarp.SendWR{ID: 2, Op: iwarp.OpCompareSwap, Remote: lock, Compare: uint64(r), CompareMask: ^uint64(0), Swap: uint64(r + 1), SwapMask: ^uint64(0)},
			iwarp.SendWR{ID: 3, Op: iwarp.OpSend, Flags: iwarp.Signaled},
		); err != nil {
			t.Fatal(err)
		}
		if c := nextOK(t, b); c.Op != iwarp.OpRecv || c.ID != uint64(r) {
			t.Fatalf("round %d: receive completion %+v", r, c)
		}
		if got, _ := target.AtomicLoad(0); got != uint64(3*(r+1)) {
			t.Fatalf("round %d: counter %d at the Send's completion, want %d", r, got, 3*(r+1))
		}
		if got, _ := target.AtomicLoad(8); got != uint64(r+1) {
			t.Fatalf("round %d: lock word %d at the Send's completion, want %d", r, got, r+1)
		}
		if c := nextOK(t, a); c.ID != 3 {
			t.Fatalf("round %d: requester completion %+v", r, c)
		}
	}
}

// TestOrderingImmediateDataInPostingOrderAfterWrites: Immediate Data is
// ordered like a Send (RFC 7306 §6.4): Sends, Immediate Data and Writes with
// Immediate complete at the receiver in posting order, each consuming the
// next receive, and each completion comes after every earlier Write was
// placed.
func TestOrderingImmediateDataInPostingOrderAfterWrites(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	const wlen = 32 << 10
	regions := make([][]byte, 3) // targets of Write A, Write B, Write with Immediate C
	mrs := make([]*iwarp.MR, 3)
	srcs := make([]*iwarp.MR, 3)
	for i := range regions {
		regions[i] = make([]byte, wlen)
		mrs[i], _ = b.pd.RegisterMemory(regions[i], iwarp.AccessRemoteWrite)
		s := bytes.Repeat([]byte{byte(0x11 * (i + 1))}, wlen)
		s[0], s[wlen-1] = byte(i), byte(i+100)
		srcs[i], _ = a.pd.RegisterMemory(s, 0)
	}
	const slot = 64
	rbuf := make([]byte, 5*slot)
	rmr, _ := b.pd.RegisterMemory(rbuf, iwarp.AccessLocalWrite)
	for i := 0; i < 5; i++ {
		if err := b.qp.PostRecv(iwarp.RecvWR{ID: uint64(10 + i), SGL: []iwarp.SGE{rmr.SGE(slot*i, slot)}}); err != nil {
			t.Fatal(err)
		}
	}
	msg1 := []byte("first Send......")
	msg2 := []byte("second Send, 24 bytes...")
	m1, _ := a.pd.RegisterMemory(msg1, 0)
	m2, _ := a.pd.RegisterMemory(msg2, 0)
	if err := a.qp.PostSend(
		iwarp.SendWR{ID: 1, Op: iwarp.OpSend, SGL: []iwarp.SGE{m1.SGE(0, len(msg1))}},
		iwarp.SendWR{ID: 2, Op: iwarp.OpWrite, SGL: []iwarp.SGE{srcs[0].SGE(0, wlen)}, Remote: mrs[0].Remote()},
		iwarp.SendWR{ID: 3, Op: iwarp.OpImmediate, Immediate: 0x1001},
		iwarp.SendWR{ID: 4, Op: iwarp.OpWrite, SGL: []iwarp.SGE{srcs[1].SGE(0, wlen)}, Remote: mrs[1].Remote()},
		iwarp.SendWR{ID: 5, Op: iwarp.OpSend, SGL: []iwarp.SGE{m2.SGE(0, len(msg2))}},
		iwarp.SendWR{ID: 6, Op: iwarp.OpWrite, Flags: iwarp.WithImmediate, SGL: []iwarp.SGE{srcs[2].SGE(0, wlen)}, Remote: mrs[2].Remote(), Immediate: 0x1002},
		iwarp.SendWR{ID: 7, Op: iwarp.OpImmediate, Flags: iwarp.Signaled | iwarp.Solicited, Immediate: 0x1003},
	); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		imm    uint64 // 0: a Send
		length int
		placed int // Writes placed by then
		msg    []byte
	}{
		{0, len(msg1), 0, msg1},
		{0x1001, 8, 1, nil},
		{0, len(msg2), 2, msg2},
		{0x1002, 8, 3, nil},
		{0x1003, 8, 3, nil},
	}
	checked := 0
	for i, w := range want {
		c := nextOK(t, b)
		if c.ID != uint64(10+i) || c.Op != iwarp.OpRecv || c.Len != w.length || c.HasImmediate != (w.imm != 0) || c.Immediate != w.imm {
			t.Fatalf("receive %d: %+v, want imm %#x len %d", i, c, w.imm, w.length)
		}
		got := rbuf[slot*i : slot*i+c.Len]
		if w.imm != 0 {
			if !bytes.Equal(got, binary.BigEndian.AppendUint64(nil, w.imm)) {
				t.Fatalf("receive %d: buffer % x, want the immediate big-endian", i, got)
			}
		} else if !bytes.Equal(got, w.msg) {
			t.Fatalf("receive %d: %q", i, got)
		}
		for ; checked < w.placed; checked++ {
			if !bytes.Equal(regions[checked], srcs[checked].Bytes()) {
				t.Fatalf("receive %d: Write %d not placed before it", i, checked)
			}
		}
	}
	if c := nextOK(t, a); c.ID != 7 {
		t.Fatalf("requester completion %+v", c)
	}
}

// TestOrderingAtomicsAndReadsCompleteInPostingOrder: atomics and Reads
// outstanding together share QN 1 and the ORD credits; the responder runs
// them in arrival order and answers in request order (RFC 7306 §5.2.2,
// §7), so they complete in posting order, the atomics with the values of a
// sequential execution. A Read sees at least every earlier atomic; it may
// also see later ones, because a Read Response may be generated after later
// messages were processed (RFC 5040 §5.5), and this stack does so when the
// response waits for the transmit goroutine.
func TestOrderingAtomicsAndReadsCompleteInPostingOrder(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	target, err := b.pd.RegisterMemory(alignedBuf(8), iwarp.AccessRemoteRead|iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	if ord := a.qp.Attributes().ORD; ord < 12 {
		t.Fatalf("ORD %d: too small to keep the batch outstanding", ord)
	}
	const n = 12
	sink, _ := a.pd.RegisterMemory(make([]byte, 8*n), iwarp.AccessLocalWrite)
	var wrs []iwarp.SendWR
	type expect struct {
		op    iwarp.Opcode
		value uint64 // original value (atomics) or value read
	}
	var exp []expect
	v := uint64(0) // the word's value, executed sequentially
	states := []uint64{0}
	stateAt := make([]int, 0, n) // index into states of the value at each WR
	for i := 0; i < n; i++ {
		wr := iwarp.SendWR{ID: uint64(100 + i), Flags: iwarp.Signaled, Remote: target.Remote()}
		stateAt = append(stateAt, len(states)-1)
		switch i % 4 {
		case 0:
			wr.Op, wr.Add = iwarp.OpFetchAdd, uint64(i+1)
			exp = append(exp, expect{wr.Op, v})
			v += uint64(i + 1)
			states = append(states, v)
		case 1, 3:
			wr.Op, wr.SGL = iwarp.OpRead, []iwarp.SGE{sink.SGE(8*i, 8)}
			exp = append(exp, expect{wr.Op, v})
		case 2:
			// Swaps when i/4 is even, fails (leaves v) when odd.
			cmp := v
			if i/4%2 == 1 {
				cmp = v + 1
			}
			wr.Op, wr.Compare, wr.CompareMask, wr.Swap, wr.SwapMask = iwarp.OpCompareSwap, cmp, ^uint64(0), v*10+7, ^uint64(0)
			exp = append(exp, expect{wr.Op, v})
			if cmp == v {
				v = v*10 + 7
				states = append(states, v)
			}
		}
		wrs = append(wrs, wr)
	}
	if err := a.qp.PostSend(wrs...); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		c := nextOK(t, a)
		if c.ID != uint64(100+i) || c.Op != exp[i].op {
			t.Fatalf("completion %d out of posting order: %+v", i, c)
		}
		if c.Op == iwarp.OpRead {
			got := binary.NativeEndian.Uint64(sink.Bytes()[8*i:])
			if !slices.Contains(states[stateAt[i]:], got) {
				t.Fatalf("completion %d (Read): value %d, want one of %v", i, got, states[stateAt[i]:])
			}
			continue
		}
		if c.Original != exp[i].value {
			t.Fatalf("completion %d (%v): original %d, want %d", i, c.Op, c.Original, exp[i].value)
		}
	}
	if got, _ := target.AtomicLoad(0); got != v {
		t.Fatalf("target %d, want %d", got, v)
	}
}

// TestWriteWithImmediateNoReceiveIsFatal: Write with Immediate is a Write
// followed by Immediate Data; when the Immediate Data finds no posted
// receive, the Write's bytes are still placed, no receive completes, and
// the receiver terminates the stream with DDP/2/0x02 (no buffer available),
// as for a Send.
func TestWriteWithImmediateNoReceiveIsFatal(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	dst := make([]byte, 16<<10)
	dmr, _ := b.pd.RegisterMemory(dst, iwarp.AccessRemoteWrite)
	src := make([]byte, len(dst))
	for i := range src {
		src[i] = byte(i*13 + 1)
	}
	smr, _ := a.pd.RegisterMemory(src, 0)
	if err := a.qp.PostSend(iwarp.SendWR{ID: 1, Op: iwarp.OpWrite, Flags: iwarp.WithImmediate | iwarp.Signaled,
		SGL: []iwarp.SGE{smr.SGE(0, len(src))}, Remote: dmr.Remote(), Immediate: 77}); err != nil {
		t.Fatal(err)
	}
	wantTerminated(t, ctx, b, true, iwarp.TermDDPNoBuffer)
	wantTerminated(t, ctx, a, false, iwarp.TermDDPNoBuffer)
	// The receiver's teardown ran on its receive goroutine after the
	// placement, and Done was closed after it: the bytes may be read now.
	if !bytes.Equal(dst, src) {
		t.Fatal("the Write part was not placed")
	}
	var cs [4]iwarp.Completion
	if n := b.cq.Poll(cs[:]); n != 0 {
		t.Fatalf("receiver reported %d completions: %+v", n, cs[:n])
	}
}

// refFetchAddMasked is RFC 7306 §5.1.1's pseudo-code, bit by bit: the
// carry out of a bit set in mask is discarded.
func refFetchAddMasked(v, add, mask uint64) uint64 {
	var out, carry uint64
	for bit := 0; bit < 64; bit++ {
		loc := uint64(1) << bit
		sum := carry + (v>>bit)&1 + (add>>bit)&1
		out |= (sum & 1) << bit
		carry = (sum & 2) >> 1
		if mask&loc != 0 {
			carry = 0
		}
	}
	return out
}

// TestMaskedAtomicEdgeCases: the boundary masks of RFC 7306 §5.1 through
// the public API, each checked against the RFC's pseudo-code (FetchAdd) or
// its definition (CmpSwap): the original value is returned and the word
// ends as specified.
func TestMaskedAtomicEdgeCases(t *testing.T) {
	type tc struct {
		name                                 string
		fetchAdd                             bool
		init                                 uint64
		add, addMask                         uint64
		compare, compareMask, swap, swapMask uint64
		want                                 uint64
	}
	cases := []tc{
		{name: "AddMaskAllOnes/every-bit-its-own-field-is-xor", fetchAdd: true,
			init: 0x0123456789ABCDEF, add: 0xFFFF0000F0F0AAAA, addMask: ^uint64(0), want: 0x0123456789ABCDEF ^ 0xFFFF0000F0F0AAAA},
		{name: "AddMaskTopBit/one-64-bit-field-is-plain-add", fetchAdd: true,
			init: 0xFFFFFFFFFFFFFFFE, add: 3, addMask: 1 << 63, want: 1},
		{name: "AddMaskTopBit/carry-into-top-bit-kept", fetchAdd: true,
			init: 0x7FFFFFFFFFFFFFFF, add: 1, addMask: 1 << 63, want: 0x8000000000000000},
		{name: "AddMaskOne/bit-0-alone-carry-dropped", fetchAdd: true,
			init: 3, add: 3, addMask: 1, want: 4},
		{name: "AddMaskOne/upper-field-wraps", fetchAdd: true,
			init: 0xFFFFFFFFFFFFFFFF, add: 0xFFFFFFFFFFFFFFFF, addMask: 1, want: 0xFFFFFFFFFFFFFFFC},
		{name: "CompareMaskZero/always-swaps",
			init: 0xAAAA, compare: 0x5555, compareMask: 0, swap: 0x77, swapMask: ^uint64(0), want: 0x77},
		{name: "SwapMaskZero/never-changes-memory",
			init: 0xBBBB, compare: 0xBBBB, compareMask: ^uint64(0), swap: 0x99, swapMask: 0, want: 0xBBBB},
		{name: "SwapMaskPartial/only-masked-bits-taken",
			init: 0x1111222233334444, compare: 0, compareMask: 0, swap: 0xFFFFFFFFFFFFFFFF, swapMask: 0x00FF00FF00FF00FF, want: 0x11FF22FF33FF44FF},
	}
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	buf := alignedBuf(8 * len(cases))
	for i, c := range cases {
		binary.NativeEndian.PutUint64(buf[8*i:], c.init) // before registration
	}
	target, err := b.pd.RegisterMemory(buf, iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.fetchAdd && refFetchAddMasked(c.init, c.add, c.addMask) != c.want {
				t.Fatalf("case disagrees with the RFC pseudo-code: %#x", refFetchAddMasked(c.init, c.add, c.addMask))
			}
			word, _ := target.RemoteSlice(8*i, 8)
			var orig uint64
			var err error
			if c.fetchAdd {
				orig, err = a.qp.FetchAddMasked(ctx, word, c.add, c.addMask)
			} else {
				orig, err = a.qp.CompareSwapMasked(ctx, word, c.compare, c.compareMask, c.swap, c.swapMask)
			}
			if err != nil {
				t.Fatal(err)
			}
			if orig != c.init {
				t.Fatalf("original %#x, want %#x", orig, c.init)
			}
			if got, _ := target.AtomicLoad(8 * i); got != c.want {
				t.Fatalf("word %#x, want %#x", got, c.want)
			}
		})
	}
}
