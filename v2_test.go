package iwarp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/fpdu"
)

// v2Sizes are the message sizes of the V2 end-to-end tests.
func v2Sizes() []int {
	big := 64 << 20
	if testing.Short() || raceEnabled {
		big = 8 << 20
	}
	return []int{0, 1, 4095, 65000, 1 << 20, big}
}

// TestSendWithImmediateV2: every size, into a multi-SGE receive whose total
// is exactly the payload length (the 8 immediate bytes do not count).
func TestSendWithImmediateV2(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	if !a.qp.Attributes().V2 || !b.qp.Attributes().V2 {
		t.Fatal("V2 not agreed between two of our endpoints")
	}
	ctx := ctx10(t)
	for _, n := range v2Sizes() {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dst := make([]byte, n+1)
			dmr, _ := b.pd.RegisterMemory(dst, iwarp.AccessLocalWrite)
			cut := n / 3
			if err := b.qp.PostRecv(iwarp.RecvWR{ID: 9, SGL: []iwarp.SGE{dmr.SGE(0, cut), dmr.SGE(cut, n-cut)}}); err != nil {
				t.Fatal(err)
			}
			src := make([]byte, n+1)
			for i := range src {
				src[i] = byte(i*7 + 1)
			}
			smr, _ := a.pd.RegisterMemory(src, 0)
			if err := a.qp.SendWithImmediate(ctx, uint64(n)<<8|0xAB, smr.SGE(0, n)); err != nil {
				t.Fatal(err)
			}
			c, err := b.cq.Next(ctx)
			if err != nil || c.Status != iwarp.StatusSuccess || c.Len != n || !c.HasImmediate || c.Immediate != uint64(n)<<8|0xAB || c.Op != iwarp.OpRecv {
				t.Fatalf("%+v %v", c, err)
			}
			if !bytes.Equal(dst[:n], src[:n]) || dst[n] != 0 {
				t.Fatal("payload differs or overran the receive")
			}
		})
	}
}

// TestReadV2 reads every size into a three-SGE sink.
func TestReadV2(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	for _, n := range v2Sizes() {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			src := make([]byte, max(n, 1))
			for i := range src {
				src[i] = byte(i ^ i>>8)
			}
			smr, _ := b.pd.RegisterMemory(src, iwarp.AccessRemoteRead)
			remote, _ := smr.RemoteSlice(0, n)
			sink := make([]byte, n+64)
			kmr, _ := a.pd.RegisterMemory(sink, iwarp.AccessLocalWrite)
			c1, c2 := n/5, n/2
			// Gaps of 16 bytes between the SGEs stay untouched.
			sgl := []iwarp.SGE{kmr.SGE(0, c1), kmr.SGE(c1+16, c2-c1), kmr.SGE(c2+32, n-c2)}
			if err := a.qp.ReadV2(ctx, remote, sgl...); err != nil {
				t.Fatal(err)
			}
			got := append(append(append([]byte(nil), sink[:c1]...), sink[c1+16:c2+16]...), sink[c2+32:n+32]...)
			if !bytes.Equal(got, src[:n]) {
				t.Fatal("read bytes differ")
			}
			for _, g := range [][]byte{sink[c1 : c1+16], sink[c2+16 : c2+32], sink[n+32:]} {
				if !bytes.Equal(g, make([]byte, len(g))) {
					t.Fatal("a gap between SGEs was written")
				}
			}
		})
	}
}

// rv2Frames counts the FPDUs with RDMAP version 2 in a recorded Initiator
// stream.
func rv2Frames(t *testing.T, stream []byte) int {
	t.Helper()
	n := 0
	for _, u := range recordedULPDUs(t, stream) {
		if u[1]>>6 == 2 {
			n++
		}
	}
	return n
}

// TestV2Negotiation: V2 is used (every frame RV=2) exactly when both sides
// offer it; a peer without V2, or without any extension, never receives an
// RV=2 frame and the V2 calls fail locally.
func TestV2Negotiation(t *testing.T) {
	rows := []struct {
		name           string
		client, server iwarp.ConnOptions
		v2             bool
	}{
		{"both", iwarp.ConnOptions{}, iwarp.ConnOptions{}, true},
		{"server-RFC7306-only", iwarp.ConnOptions{}, iwarp.ConnOptions{Extensions: iwarp.ExtRFC7306}, false},
		{"server-none", iwarp.ConnOptions{}, iwarp.ConnOptions{Interop: &iwarp.InteropOptions{HideExtensions: true}}, false},
		{"client-RFC7306-only", iwarp.ConnOptions{Extensions: iwarp.ExtRFC7306}, iwarp.ConnOptions{}, false},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var rec *recorder
			r.client.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
				var d net.Dialer
				c, err := d.DialContext(ctx, network, addr)
				rec = &recorder{Conn: c}
				return rec, err
			}
			a, b := connect(t, newEndpoint(t), newEndpoint(t), &r.client, &r.server)
			if a.qp.Attributes().V2 != r.v2 || b.qp.Attributes().V2 != r.v2 {
				t.Fatalf("V2 %v/%v, want %v", a.qp.Attributes().V2, b.qp.Attributes().V2, r.v2)
			}
			ctx := ctx10(t)
			src, _ := b.pd.RegisterMemory(make([]byte, 8), iwarp.AccessRemoteRead)
			sink, _ := a.pd.RegisterMemory(make([]byte, 8), iwarp.AccessLocalWrite)
			err := a.qp.ReadV2(ctx, src.Remote(), sink.SGE(0, 8))
			if r.v2 && err != nil {
				t.Fatal(err)
			}
			if !r.v2 && !errors.Is(err, iwarp.ErrNotSupportedByPeer) {
				t.Fatalf("ReadV2 without V2: %v", err)
			}
			if err := a.qp.Read(ctx, src.Remote(), sink.SGE(0, 8)); err != nil {
				t.Fatal(err) // RFC 5040 Read works either way (under RV=2 when agreed)
			}
			if err := a.qp.Disconnect(ctx); err != nil {
				t.Fatal(err)
			}
			stream := rec.bytes()
			n := rv2Frames(t, stream)
			if r.v2 && n == 0 || !r.v2 && n != 0 {
				t.Fatalf("%d RV=2 frames sent (V2 agreed: %v)", n, r.v2)
			}
			// The first FPDU is the P2P RTR (a zero-length Write): under
			// RV=2 exactly when V2 was agreed.
			off := 20 + (int(stream[18])<<8 | int(stream[19]))
			rtr, err := fpdu.DecodeFPDU(nil, stream[off:], 0, fpdu.Options{CRC: true})
			if err != nil || len(rtr.ULPDU) != 14 || rtr.ULPDU[1]&0x1f != 0 {
				t.Fatalf("first FPDU is not a Write RTR: % x (%v)", rtr.ULPDU, err)
			}
			if got := rtr.ULPDU[1] >> 6; (got == 2) != r.v2 {
				t.Fatalf("RTR with RDMAP version %d (V2 agreed: %v)", got, r.v2)
			}
		})
	}
}

// TestV2MixedTraffic: Read V2 Responses interleave with Atomic Responses on
// QN 3 and with Sends and Writes; everything completes in posting order
// with the right data.
func TestV2MixedTraffic(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	region := alignedBuf(4096)
	for i := 8; i < len(region); i++ {
		region[i] = byte(i)
	}
	rmr, _ := b.pd.RegisterMemory(region, iwarp.AccessRemoteRead|iwarp.AccessRemoteAtomic|iwarp.AccessRemoteWrite)
	word, _ := rmr.RemoteSlice(0, 8)
	data, _ := rmr.RemoteSlice(1024, 1024)
	rb, _ := b.pd.RegisterMemory(make([]byte, 64), iwarp.AccessLocalWrite)
	for i := 0; i < 4; i++ {
		if err := b.qp.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{rb.SGE(0, 64)}}); err != nil {
			t.Fatal(err)
		}
	}
	sink, _ := a.pd.RegisterMemory(make([]byte, 4*1024), iwarp.AccessLocalWrite)
	res, _ := a.pd.RegisterMemory(alignedBuf(16), iwarp.AccessLocalWrite)
	src, _ := a.pd.RegisterMemory(bytes.Repeat([]byte{0xEE}, 256), 0)
	wrs := []iwarp.SendWR{
		{ID: 1, Op: iwarp.OpReadV2, SGL: []iwarp.SGE{sink.SGE(0, 512), sink.SGE(600, 512)}, Remote: data},
		{ID: 2, Op: iwarp.OpFetchAdd, SGL: []iwarp.SGE{res.SGE(0, 8)}, Remote: word, Add: 5},
		{ID: 3, Op: iwarp.OpSend, Flags: iwarp.WithImmediate, SGL: []iwarp.SGE{src.SGE(0, 16)}, Immediate: 3},
		{ID: 4, Op: iwarp.OpWrite, SGL: []iwarp.SGE{src.SGE(0, 256)}, Remote: data},
		{ID: 5, Op: iwarp.OpReadV2, SGL: []iwarp.SGE{sink.SGE(2048, 1024)}, Remote: data},
		{ID: 6, Op: iwarp.OpCompareSwap, SGL: []iwarp.SGE{res.SGE(8, 8)}, Remote: word, Compare: 5, CompareMask: ^uint64(0), Swap: 9, SwapMask: ^uint64(0)},
		{ID: 7, Op: iwarp.OpFetchAdd, Remote: word, Add: 1},
	}
	for i := range wrs {
		wrs[i].Flags |= iwarp.Signaled
	}
	if err := a.qp.PostSend(wrs...); err != nil {
		t.Fatal(err)
	}
	want := []uint64{0, 5, 9}
	k := 0
	for _, wr := range wrs {
		c, err := a.cq.Next(ctx)
		if err != nil || c.ID != wr.ID || c.Status != iwarp.StatusSuccess {
			t.Fatalf("completion %+v %v, want id %d", c, err, wr.ID)
		}
		if wr.Op == iwarp.OpFetchAdd || wr.Op == iwarp.OpCompareSwap {
			if c.Original != want[k] {
				t.Fatalf("atomic %d original %d, want %d", wr.ID, c.Original, want[k])
			}
			k++
		}
	}
	s := sink.Bytes()
	orig := make([]byte, 4096) // the region as registered (the target's memory is not read here)
	for i := 8; i < len(orig); i++ {
		orig[i] = byte(i)
	}
	// The first Read V2 may reflect the later Write of its first 256 bytes
	// (RFC 5040 §5.5: a Read Response may be generated after later messages
	// were processed); the rest is the original data either way.
	if !bytes.Equal(s[:256], orig[1024:1280]) && !bytes.Equal(s[:256], bytes.Repeat([]byte{0xEE}, 256)) {
		t.Fatal("first Read V2 data is neither the original nor the later Write")
	}
	if !bytes.Equal(s[256:512], orig[1280:1536]) || !bytes.Equal(s[600:1112], orig[1536:2048]) {
		t.Fatal("first Read V2 data differs")
	}
	if !bytes.Equal(s[2048:2048+256], bytes.Repeat([]byte{0xEE}, 256)) {
		t.Fatal("the second Read V2 did not see the earlier Write")
	}
}
