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

// v2Vectors returns the ULPDUs of shared/vectors/v2.tsv by name.
func v2Vectors(t *testing.T) map[string][]byte {
	t.Helper()
	f, err := os.Open("../../../shared/vectors/v2.tsv")
	if err != nil {
		t.Skipf("shared vectors not available: %v", err)
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
// shared/vectors/v2.tsv byte for byte, as Initiator (Write, Send with
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
