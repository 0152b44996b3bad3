package fpdu

import (
	"fmt"
	"testing"
)

// BenchmarkStream measures one-way FPDU throughput over loopback TCP: a
// sender goroutine frames FPDUs of the given on-wire size (batching
// batch FPDUs per Flush), the benchmark goroutine reads them, header and
// payload separately. kind=tcp is raw TCP with the same layout.
func BenchmarkStream(b *testing.B) {
	for _, size := range []int{88, 1456, 65536} {
		for _, kind := range []string{"tcp", "fpdu", "fpdu-crc"} {
			b.Run(fmt.Sprintf("size=%d/kind=%s", size, kind), func(b *testing.B) {
				benchStream(b, size, kind)
			})
		}
	}
}

func benchStream(b *testing.B, size int, kind string) {
	a, c := tcpPair(b)
	opts := Options{CRC: kind == "fpdu-crc"}
	ulpdu := size - HeaderLen - CRCLen
	ulpdu -= PadLen(ulpdu)
	if ulpdu > MaxULPDULen {
		ulpdu = MaxULPDULen - 1
		ulpdu -= PadLen(ulpdu)
	}
	batch := max(1, 16384/size)
	hdr, payload := make([]byte, 14), make([]byte, ulpdu-14)
	buf := make([]byte, ulpdu)
	errc := make(chan error, 1)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	if kind == "tcp" {
		go func() {
			frame := make([]byte, size*batch)
			var err error
			for i := 0; i < b.N && err == nil; i += batch {
				_, err = a.Write(frame[:size*min(batch, b.N-i)])
			}
			errc <- err
		}()
		rb := make([]byte, 64<<10)
		for left := size * b.N; left > 0; {
			n, err := c.Read(rb[:min(len(rb), left)])
			if err != nil {
				b.Fatal(err)
			}
			left -= n
		}
	} else {
		w, r := NewConn(a, opts).Writer(), NewConn(c, opts).Reader()
		go func() {
			var err error
			for i := 0; i < b.N && err == nil; i++ {
				err = w.Append(hdr, payload)
				if err == nil && ((i+1)%batch == 0 || i == b.N-1) {
					err = w.Flush()
				}
			}
			errc <- err
		}()
		for range b.N {
			n, err := r.Next()
			if err == nil {
				err = r.Read(buf[:14])
			}
			if err == nil {
				err = r.Read(buf[14:n])
			}
			if err == nil {
				err = r.End()
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
}

// discardConn accepts and drops every write.
type discardConn struct{ memConn }

func (*discardConn) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkWriter measures framing alone (Append+Flush into a sink).
func BenchmarkWriter(b *testing.B) {
	for _, size := range []int{88, 1460, 65536} {
		for _, crc := range []bool{false, true} {
			for _, markers := range []bool{false, true} {
				b.Run(fmt.Sprintf("size=%d/crc=%v/markers=%v", size, crc, markers), func(b *testing.B) {
					w := NewConn(&discardConn{}, Options{CRC: crc, SendMarkers: markers}).Writer()
					u := size - HeaderLen - CRCLen
					u -= PadLen(u)
					u = min(u, MaxULPDULen-1)
					hdr, payload := make([]byte, 14), make([]byte, u-14)
					b.SetBytes(int64(size))
					b.ReportAllocs()
					for b.Loop() {
						if err := w.WriteFPDU(hdr, payload); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkDecodeFPDU measures the buffer-level decoder.
func BenchmarkDecodeFPDU(b *testing.B) {
	for _, markers := range []bool{false, true} {
		b.Run(fmt.Sprintf("markers=%v", markers), func(b *testing.B) {
			opts := Options{CRC: true, SendMarkers: markers, RecvMarkers: markers}
			mc := &memConn{}
			if err := NewConn(mc, opts).Writer().WriteFPDU(make([]byte, 14), make([]byte, 1440)); err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, 0, 2048)
			b.SetBytes(int64(len(mc.out)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeFPDU(dst, mc.out, 0, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
