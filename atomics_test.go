package iwarp_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/goiwarp/iwarp"
	"github.com/goiwarp/iwarp/internal/fpdu"
)

// alignedBuf returns n bytes at an 8-byte aligned address.
func alignedBuf(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)
}

// TestAtomicCounterManyQPs: 8 QPs, each on its own connection to one
// Device, do FetchAdds on one counter while the owner adds locally; the
// counter ends exactly at the sum.
func TestAtomicCounterManyQPs(t *testing.T) {
	const qps = 8
	each := 10000
	if testing.Short() {
		each = 2000
	}
	server := newEndpoint(t)
	counter, err := server.pd.RegisterMemory(alignedBuf(64), iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	remote := counter.Remote()
	// 80,000 round trips: under -race on a loaded 2-core machine that can
	// take most of 10 s, so this test has a minute (a hang still fails it).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, qps+1)
	for i := 0; i < qps; i++ {
		// Each client QP connects to its own server QP on the same Device.
		sq, err := server.pd.NewQP(&iwarp.QPConfig{SendCQ: mustCQ(t, server.dev), RecvCQ: mustCQ(t, server.dev)})
		if err != nil {
			t.Fatal(err)
		}
		client := newEndpoint(t)
		connect(t, client, &endpoint{dev: server.dev, pd: server.pd, qp: sq}, nil, nil)
		if !client.qp.Attributes().RFC7306 {
			t.Fatal("RFC 7306 not negotiated between two of our endpoints")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < each; k++ {
				if _, err := client.qp.FetchAdd(ctx, remote, 1); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the owner's local accessor, atomic with the remote ones
		defer wg.Done()
		for k := 0; k < each; k++ {
			if _, err := counter.AtomicAdd(0, 1); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, _ := counter.AtomicLoad(0); got != uint64((qps+1)*each) {
		t.Fatalf("counter %d, want %d", got, (qps+1)*each)
	}
}

func mustCQ(t *testing.T, d *iwarp.Device) *iwarp.CQ {
	cq, err := d.NewCQ(256, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cq
}

// TestCompareSwapSpinlock: a CompareSwap spinlock guards a plain counter
// that clients update with RDMA Read and Write; no update is lost.
func TestCompareSwapSpinlock(t *testing.T) {
	const clients, rounds = 4, 50
	server := newEndpoint(t)
	mem := alignedBuf(16) // word 0: the lock, word 1: the plain counter
	mr, err := server.pd.RegisterMemory(mem, iwarp.AccessRemoteAtomic|iwarp.AccessRemoteRead|iwarp.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	lock, _ := mr.RemoteSlice(0, 8)
	cnt, _ := mr.RemoteSlice(8, 8)
	ctx := ctx10(t)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		sq, err := server.pd.NewQP(&iwarp.QPConfig{SendCQ: mustCQ(t, server.dev), RecvCQ: mustCQ(t, server.dev)})
		if err != nil {
			t.Fatal(err)
		}
		c := newEndpoint(t)
		connect(t, c, &endpoint{dev: server.dev, pd: server.pd, qp: sq}, nil, nil)
		local, _ := c.pd.RegisterMemory(alignedBuf(8), iwarp.AccessLocalWrite)
		me := uint64(i + 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				for { // acquire
					old, err := c.qp.CompareSwap(ctx, lock, 0, me)
					if err != nil {
						errs <- err
						return
					}
					if old == 0 {
						break
					}
				}
				if err := c.qp.Read(ctx, cnt, local.SGE(0, 8)); err != nil {
					errs <- err
					return
				}
				v := binary.LittleEndian.Uint64(local.Bytes())
				binary.LittleEndian.PutUint64(local.Bytes(), v+1)
				if err := c.qp.Write(ctx, cnt, local.SGE(0, 8)); err != nil {
					errs <- err
					return
				}
				// Release: the Write is placed before the CompareSwap is
				// processed (RFC 7306 §7 ordering on one stream).
				if old, err := c.qp.CompareSwap(ctx, lock, me, 0); err != nil || old != me {
					errs <- errors.Join(err, errors.New("lost the lock"))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// The last release (an atomic on the lock word) orders every Write of
	// the counter before this load of the lock word.
	if l, _ := mr.AtomicLoad(0); l != 0 {
		t.Fatalf("lock still held by %d", l)
	}
	if got, _ := mr.AtomicLoad(8); got != clients*rounds {
		t.Fatalf("counter %d, want %d", got, clients*rounds)
	}
}

// TestMisalignedAtomicRegion: remote-atomic access is refused at
// registration for a buffer that is not 8-byte aligned, so an atomic is
// never silently non-atomic.
func TestMisalignedAtomicRegion(t *testing.T) {
	ep := newEndpoint(t)
	buf := alignedBuf(64)
	if _, err := ep.pd.RegisterMemory(buf[1:], iwarp.AccessRemoteAtomic); !errors.Is(err, iwarp.ErrInvalidBuffer) {
		t.Fatalf("misaligned buffer accepted for remote atomics: %v", err)
	}
	mr, err := ep.pd.RegisterMemory(buf, iwarp.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mr.AtomicAdd(4, 1); !errors.Is(err, iwarp.ErrNotAtomicWord) {
		t.Fatalf("misaligned local atomic: %v", err)
	}
}

// recorder keeps every byte written to the connection.
type recorder struct {
	net.Conn
	mu  sync.Mutex
	out []byte
}

func (r *recorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	r.out = append(r.out, b...)
	r.mu.Unlock()
	return r.Conn.Write(b)
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.out...)
}

// recordedULPDUs returns the ULPDUs of a recorded Initiator stream (MPA
// Request, then FPDUs with CRC).
func recordedULPDUs(t *testing.T, stream []byte) [][]byte {
	t.Helper()
	if len(stream) < 20 {
		t.Fatal("no MPA Request recorded")
	}
	off := 20 + int(binary.BigEndian.Uint16(stream[18:20]))
	var out [][]byte
	for off < len(stream) {
		f, err := fpdu.DecodeFPDU(nil, stream[off:], 0, fpdu.Options{CRC: true})
		if err != nil {
			t.Fatalf("recorded stream at %d: %v", off, err)
		}
		out = append(out, f.ULPDU)
		off += f.Size
	}
	return out
}

// rfc7306Opcodes returns the RDMAP opcodes 0x8-0xB found in a recorded
// Initiator stream.
func rfc7306Opcodes(t *testing.T, stream []byte) []byte {
	t.Helper()
	var found []byte
	for _, u := range recordedULPDUs(t, stream) {
		if op := u[1] & 0x0f; op >= 8 && op <= 0xB {
			found = append(found, op)
		}
	}
	return found
}

// TestExtensionNegotiationMatrix: RFC 7306 is used exactly when both sides
// offer it or the ULP declares it; otherwise the calls fail locally and no
// RFC 7306 frame reaches the wire.
func TestExtensionNegotiationMatrix(t *testing.T) {
	rows := []struct {
		name           string
		client, server iwarp.ConnOptions
		agreed         bool
	}{
		{"both-offer", iwarp.ConnOptions{}, iwarp.ConnOptions{}, true},
		{"server-disabled", iwarp.ConnOptions{}, iwarp.ConnOptions{Interop: &iwarp.InteropOptions{HideExtensions: true}}, false},
		{"client-disabled", iwarp.ConnOptions{Interop: &iwarp.InteropOptions{HideExtensions: true}}, iwarp.ConnOptions{}, false},
		{"neither", iwarp.ConnOptions{Interop: &iwarp.InteropOptions{HideExtensions: true}}, iwarp.ConnOptions{Interop: &iwarp.InteropOptions{HideExtensions: true}}, false},
		{"ULP-declared", iwarp.ConnOptions{PeerExtensions: iwarp.ExtRFC7306, Interop: &iwarp.InteropOptions{HideExtensions: true}}, iwarp.ConnOptions{PeerExtensions: iwarp.ExtRFC7306, Interop: &iwarp.InteropOptions{HideExtensions: true}}, true},
		{"MPA-rev1", iwarp.ConnOptions{Interop: &iwarp.InteropOptions{MPARevision: 1}}, iwarp.ConnOptions{}, true},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var rec *recorder
			r.client.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
				var d net.Dialer
				c, err := d.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				rec = &recorder{Conn: c}
				return rec, nil
			}
			a, b := connect(t, newEndpoint(t), newEndpoint(t), &r.client, &r.server)
			if got := a.qp.Attributes().RFC7306; got != r.agreed {
				t.Fatalf("client RFC7306=%v, want %v", got, r.agreed)
			}
			ctx := ctx10(t)
			target, _ := b.pd.RegisterMemory(alignedBuf(8), iwarp.AccessRemoteAtomic)
			_, err := a.qp.FetchAdd(ctx, target.Remote(), 1)
			if r.agreed {
				if err != nil {
					t.Fatal(err)
				}
			} else if !errors.Is(err, iwarp.ErrNotSupportedByPeer) {
				t.Fatalf("FetchAdd without agreement: %v", err)
			}
			if err := a.qp.Disconnect(ctx); err != nil {
				t.Fatal(err)
			}
			ops := rfc7306Opcodes(t, rec.bytes())
			if r.agreed && len(ops) != 1 {
				t.Fatalf("opcodes 0x8-0xB on the wire: %x", ops)
			}
			if !r.agreed && len(ops) != 0 {
				t.Fatalf("RFC 7306 frames sent to a peer that did not agree: %x", ops)
			}
		})
	}
}

// TestImmediateAndWriteWithImmediate through the public API.
func TestImmediateAndWriteWithImmediate(t *testing.T) {
	a, b := connectPair(t, nil, nil)
	ctx := ctx10(t)
	dst := make([]byte, 4096)
	dmr, _ := b.pd.RegisterMemory(dst, iwarp.AccessRemoteWrite)
	rb, _ := b.pd.RegisterMemory(make([]byte, 8), iwarp.AccessLocalWrite)
	for i := 0; i < 2; i++ {
		if err := b.qp.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{rb.SGE(0, 8)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.qp.ImmediateData(ctx, 0x1122334455667788, iwarp.Solicited); err != nil {
		t.Fatal(err)
	}
	c, err := b.cq.Next(ctx)
	if err != nil || !c.HasImmediate || c.Immediate != 0x1122334455667788 || !c.Solicited || c.Len != 8 {
		t.Fatalf("%+v %v", c, err)
	}
	src := make([]byte, 4096)
	for i := range src {
		src[i] = byte(i * 3)
	}
	smr, _ := a.pd.RegisterMemory(src, 0)
	if err := a.qp.WriteWithImmediate(ctx, dmr.Remote(), 99, smr.SGE(0, 4096)); err != nil {
		t.Fatal(err)
	}
	c, err = b.cq.Next(ctx)
	if err != nil || c.Immediate != 99 || c.Op != iwarp.OpRecv {
		t.Fatalf("%+v %v", c, err)
	}
	for i := range dst {
		if dst[i] != src[i] {
			t.Fatal("Write not placed before its immediate completed")
		}
	}
}
