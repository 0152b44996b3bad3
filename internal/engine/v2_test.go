package engine

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/goiwarp/iwarp/internal/fpdu"
	"github.com/goiwarp/iwarp/internal/mem"
	"github.com/goiwarp/iwarp/internal/wire"
)

// v2Vectors returns the ULPDUs of internal/vectors/testdata/v2.tsv by name.
func v2Vectors(t *testing.T) map[string][]byte {
	t.Helper()
	f, err := os.Open("../vectors/testdata/v2.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "name\t") {
			continue
		}
		c := strings.Split(line, "\t")
		b, err := hex.DecodeString(c[3])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(c[0], "mpa-") {
			n := int(binary.BigEndian.Uint16(b))
			b = b[2 : 2+n] // the ULPDU
		}
		out[c[0]] = b
	}
	return out
}

// TestV2VectorsProducedByTheStack: a V2 connection produces the FPDUs of
// internal/vectors/testdata/v2.tsv byte for byte, as Initiator (Write, Send with
// Immediate in three variants, Read V2 Request, Atomic Request) and as
// Responder (the Read V2 Response in two segments and the Atomic Response,
// sharing QN 3's MSNs).
func TestV2VectorsProducedByTheStack(t *testing.T) {
	vec := v2Vectors(t)
	o := pairOpts{crc: true, ird: 4, ord: 4, ext: true, mulpdu: wire.UntaggedHdrLen + 8}

	// The Initiator side: our QP sends, a raw peer compares.
	t.Run("initiator", func(t *testing.T) {
		var src *mem.Region
		a, peer := rawSideV2(t, o, func(a *side) {
			src, _, _ = a.registerFilled(t, 64, 0, -1)
			copy(src.Bytes(), "v2-writehello!")
		})
		sink, _, _ := a.register(t, 16, mem.AccessLocalWrite)
		res, _, _ := a.register(t, 8, mem.AccessLocalWrite)
		wrs := []SendWR{
			{ID: 0, Op: OpWrite, SGL: []SGE{{Region: src, Off: 0, Len: 8}}, RemoteSTag: 0x1000, RemoteTO: 0},
			{ID: 1, Op: OpSendImm, SGL: []SGE{{Region: src, Off: 8, Len: 6}}, Imm: 0x1122334455667788},
			{ID: 2, Op: OpSendImm, Imm: 0xdeadbeef},
			{ID: 3, Op: OpSendSEInvImm, InvSTag: 0x00abcd01, Imm: 7},
			{ID: 4, Op: OpReadV2, SGL: []SGE{{Region: sink, Len: 16}}, RemoteSTag: 0x2000, RemoteTO: 0x40},
			{ID: 5, Op: OpFetchAdd, SGL: []SGE{{Region: res, Len: 8}}, RemoteSTag: 0x2000, RemoteTO: 0x80, Data: 1},
		}
		if _, err := a.qp.PostSend(wrs); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"v2-write", "v2-send-imm-seg1", "v2-send-imm-last", "v2-send-imm-empty", "v2-send-inv-se-imm", "v2-read-request", "v2-atomic-request"} {
			got := peer.readULPDU(t)
			want := vec[name]
			if name == "v2-atomic-request" {
				// The request identifier is the requester's choice (ours:
				// its send-queue sequence number); the vector uses 1.
				binary.BigEndian.PutUint32(got[22:], 1)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s:\n got % x\nwant % x", name, got, want)
			}
		}
	})

	// The Responder side: a raw peer sends the vector's requests, our QP
	// answers with the vector's responses.
	t.Run("responder", func(t *testing.T) {
		_, peer := rawSideV2(t, o, func(a *side) {
			// STag 0x2000: index 0x20, key 0x00.
			seq := []uint32{0x20, 0x00}
			a.table = mem.NewTable(mem.TableOptions{Random: func() uint32 { v := seq[0]; seq = seq[1:]; return v }})
			a.qp.cfg.Table = a.table
			w := make([]uint64, 32)
			buf := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 256)
			for i := 0; i < 16; i++ {
				buf[0x40+i] = byte(i)
			}
			binary.NativeEndian.PutUint64(buf[0x80:], 41)
			r, err := a.table.Register(a.pd, buf, mem.AccessRemoteRead|mem.AccessRemoteAtomic, 0)
			if err != nil || r.STag() != 0x2000 {
				t.Fatalf("region %v %v", r.STag(), err)
			}
		})
		peer.send(t, vec["v2-read-request"])
		peer.send(t, vec["v2-atomic-request"])
		for _, name := range []string{"v2-read-response-seg1", "v2-read-response-seg2", "v2-atomic-response"} {
			if got := peer.readULPDU(t); !bytes.Equal(got, vec[name]) {
				t.Errorf("%s:\n got % x\nwant % x", name, got, vec[name])
			}
		}
	})
}

// rawSideV2 is rawSide with V2 agreed.
func rawSideV2(t *testing.T, o pairOpts, setup func(a *side)) (*side, *rawPeer) {
	t.Helper()
	ca, cb := tcpPair(t)
	a := newSide(t, o, ca)
	a.params.V2 = true
	if setup != nil {
		setup(a)
	}
	a.start(t, o)
	t.Cleanup(func() { _ = a.qp.Close(); cb.Close() })
	return a, &rawPeer{nc: cb, fc: fpdu.NewConn(cb, fpdu.Options{CRC: o.crc})}
}

// untaggedV2 is an untagged header with RDMAP version 2 (5-bit opcode).
func untaggedV2(op byte, last bool, inv, qn, msn, mo uint32) []byte {
	b := untagged(0, last, inv, qn, msn, mo)
	b[1] = 0x80 | op
	return b
}

// wantTerminateV2 is wantTerminate sent under RDMAP version 2.
func wantTerminateV2(code wire.TermCode, offending []byte, ddpLen int) []byte {
	b := wantTerminate(code, offending, ddpLen, false)
	b[1] = 0x80 | 7
	return b
}

// TestV2Terminates: each V2 violation gives its Terminate (itself carrying
// RV=2 once V2 is agreed) and a clean teardown; an RV=2 frame when V2 was
// not agreed is an invalid RDMAP version.
func TestV2Terminates(t *testing.T) {
	type tc struct {
		name string
		v2   bool
		pre  func(a *side, peer *rawPeer) // drives the QP to the phase
		bad  []byte
		code wire.TermCode
	}
	recv := func(a *side) {
		r, _, _ := a.register(t, 64, mem.AccessLocalWrite)
		if _, err := a.qp.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{{Region: r, Len: 64}}}}); err != nil {
			t.Fatal(err)
		}
	}
	readV2Outstanding := func(a *side, peer *rawPeer) {
		sink, _, _ := a.register(t, 16, mem.AccessLocalWrite)
		if _, err := a.qp.PostSend([]SendWR{{ID: 7, Op: OpReadV2, Flags: Signaled, SGL: []SGE{{Region: sink, Len: 16}}, RemoteSTag: 5}}); err != nil {
			t.Fatal(err)
		}
		peer.readULPDU(t) // the Read V2 Request
	}
	cases := []tc{
		{name: "RV2-not-negotiated/RDMAP-2-0x05", v2: false, bad: cat(untaggedV2(0x13, true, 0, 0, 1, 0), make([]byte, 8)), code: wire.TermRDMAPInvalidVersion},
		{name: "RV1-after-V2/RDMAP-2-0x05", v2: true, bad: cat(untagged(3, true, 0, 0, 1, 0), []byte("x")), code: wire.TermRDMAPInvalidVersion},
		{name: "undefined-opcode-0x17/RDMAP-2-0x06", v2: true, bad: cat(untaggedV2(0x17, true, 0, 0, 1, 0), []byte("x")), code: wire.TermRDMAPUnexpectedOpcode},
		{name: "SendImm-last-7-bytes/RDMAP-2-0xFF", v2: true, bad: cat(untaggedV2(0x13, true, 0, 0, 1, 0), make([]byte, 7)), code: wire.TermRDMAPOpUnspecified},
		{name: "SendImm-last-with-payload/RDMAP-2-0xFF", v2: true, bad: cat(untaggedV2(0x13, true, 0, 0, 1, 0), make([]byte, 12)), code: wire.TermRDMAPOpUnspecified},
		{name: "SendImm-MO-gap/DDP-2-0x04", v2: true, pre: func(a *side, p *rawPeer) { p.send(t, cat(untaggedV2(0x13, false, 0, 0, 1, 0), []byte("abcd"))) },
			bad: cat(untaggedV2(0x13, true, 0, 0, 1, 6), make([]byte, 8)), code: wire.TermDDPInvalidMO},
		{name: "ReadV2Response-unsolicited/RDMAP-2-0x06", v2: true, bad: cat(untaggedV2(0x12, true, 0, 3, 1, 0), make([]byte, 4)), code: wire.TermRDMAPUnexpectedOpcode},
		{name: "ReadV2Response-too-long/DDP-2-0x05", v2: true, pre: readV2Outstanding, bad: cat(untaggedV2(0x12, true, 0, 3, 1, 0), make([]byte, 17)), code: wire.TermDDPTooLong},
		{name: "ReadV2Response-short-at-L/DDP-2-0x04", v2: true, pre: readV2Outstanding, bad: cat(untaggedV2(0x12, true, 0, 3, 1, 0), make([]byte, 15)), code: wire.TermDDPInvalidMO},
		{name: "ReadV2Response-MO-gap/DDP-2-0x04", v2: true, pre: readV2Outstanding, bad: cat(untaggedV2(0x12, false, 0, 3, 1, 4), make([]byte, 4)), code: wire.TermDDPInvalidMO},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := pairOpts{crc: true, ord: 2, ird: 2, ext: true}
			side := rawSide
			if c.v2 {
				side = rawSideV2
			}
			a, peer := side(t, o, recv)
			if c.pre != nil {
				c.pre(a, peer)
			}
			peer.send(t, c.bad)
			got, _ := peer.readUntilTerminate(t)
			want := wantTerminate(c.code, c.bad, 18, false)
			if c.v2 {
				want = wantTerminateV2(c.code, c.bad, 18)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Terminate\n got % x\nwant % x", got, want)
			}
			<-a.qp.Done()
		})
	}
}

// TestQN3SharedMSNs: with a Read V1, a Read V2 and a FetchAdd outstanding
// together, QN 3's MSNs count only the QN 3 answers: the Read V2 Response
// has MSN 1 and the Atomic Response MSN 2 (the Read V1 Response is tagged).
func TestQN3SharedMSNs(t *testing.T) {
	o := pairOpts{crc: true, ird: 4, ext: true}
	var src *mem.Region
	_, peer := rawSideV2(t, o, func(a *side) {
		w := make([]uint64, 8)
		buf := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 64)
		var err error
		src, err = a.table.Register(a.pd, buf, mem.AccessRemoteRead|mem.AccessRemoteAtomic, 0)
		if err != nil {
			t.Fatal(err)
		}
	})
	stag := uint32(src.STag())
	v1 := cat(untaggedV2(0x1, true, 0, 1, 1, 0), readReqHdr(0x77, 0, 8, stag, 0))
	v2 := untaggedV2(0x11, true, 0, 1, 2, 0)
	v2 = binary.BigEndian.AppendUint32(v2, 8)
	v2 = binary.BigEndian.AppendUint32(v2, stag)
	v2 = binary.BigEndian.AppendUint64(v2, 8)
	fa := untaggedV2(0xA, true, 0, 1, 3, 0)
	fa = binary.BigEndian.AppendUint32(fa, 0)
	fa = binary.BigEndian.AppendUint32(fa, 9)
	fa = binary.BigEndian.AppendUint32(fa, stag)
	fa = binary.BigEndian.AppendUint64(fa, 16)
	fa = binary.BigEndian.AppendUint64(fa, 1)
	fa = binary.BigEndian.AppendUint64(fa, 0)
	fa = binary.BigEndian.AppendUint64(fa, 0)
	fa = binary.BigEndian.AppendUint64(fa, ^uint64(0))
	for _, m := range [][]byte{v1, v2, fa} {
		peer.send(t, m)
	}
	r1 := peer.readULPDU(t)
	if r1[0]&0x80 == 0 || r1[1] != 0x82 {
		t.Fatalf("first answer % x: want the tagged Read Response (RV=2)", r1[:2])
	}
	r2, r3 := peer.readULPDU(t), peer.readULPDU(t)
	if r2[1] != 0x92 || binary.BigEndian.Uint32(r2[6:]) != 3 || binary.BigEndian.Uint32(r2[10:]) != 1 {
		t.Fatalf("Read V2 Response header % x: want QN 3 MSN 1", r2[:18])
	}
	if r3[1] != 0x8b || binary.BigEndian.Uint32(r3[6:]) != 3 || binary.BigEndian.Uint32(r3[10:]) != 2 {
		t.Fatalf("Atomic Response header % x: want QN 3 MSN 2", r3[:18])
	}
}
