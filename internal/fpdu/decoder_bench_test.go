package fpdu

import (
	"fmt"
	"testing"
)

// loopConn is a net.Conn for benchmarks whose reads return a stream over
// and over, as much as asked at a time.
type loopConn struct {
	memConn
	stream []byte
	off    int
}

func (c *loopConn) Read(p []byte) (int, error) {
	n := copy(p, c.stream[c.off:])
	c.off = (c.off + n) % len(c.stream)
	return n, nil
}

// BenchmarkDecoder compares the Decoder with the Reader over the same
// in-memory stream of FPDUs of the given on-wire size (no markers, so the
// stream can repeat): the Reader reads the 14-octet header, then the rest
// into a buffer; the Decoder stages the header and places the rest into
// the same buffer, its reads as large as it asks for (kind=decoder) or
// vectored (kind=decoder-bufs). MB/s counts FPDU octets.
func BenchmarkDecoder(b *testing.B) {
	for _, size := range []int{88, 1456, 65536} {
		for _, crc := range []bool{false, true} {
			for _, kind := range []string{"reader", "decoder", "decoder-bufs"} {
				b.Run(fmt.Sprintf("size=%d/crc=%v/kind=%s", size, crc, kind), func(b *testing.B) {
					benchDecoder(b, size, crc, kind)
				})
			}
		}
	}
}

func benchDecoder(b *testing.B, size int, crc bool, kind string) {
	opts := Options{CRC: crc}
	ulpdu := min(size-HeaderLen-CRCLen, MaxULPDULen-1)
	ulpdu -= PadLen(ulpdu)
	stream := encodeRun(b, opts, ulpdu, max(1, (4<<20)/size))
	buf := make([]byte, MaxULPDULen)
	b.SetBytes(int64(len(stream) / max(1, (4<<20)/size)))
	b.ReportAllocs()
	if kind == "reader" {
		r := NewConn(&loopConn{stream: stream}, opts).Reader()
		readOne := func() error {
			n, err := r.Next()
			if err != nil {
				return err
			}
			if err := r.Read(buf[:14]); err != nil {
				return err
			}
			if err := r.Read(buf[14:n]); err != nil {
				return err
			}
			return r.End()
		}
		for b.Loop() {
			if err := readOne(); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	d := NewDecoder(opts, 0)
	src := &loopConn{stream: stream}
	var iov [][]byte
	for b.Loop() {
		for d.Step() != FPDUDone {
			switch d.Step() {
			case NeedBytes:
				if kind == "decoder-bufs" {
					iov = d.Bufs(iov[:0])
				} else {
					iov = append(iov[:0], d.Buf())
				}
				n := 0
				for _, p := range iov {
					k, _ := src.Read(p)
					n += k
					if k < len(p) {
						break
					}
				}
				d.Advance(n)
			case NeedPlace:
				d.Place(buf[:d.ULPDULen()-len(d.Header())])
			}
		}
		if d.Err() != nil {
			b.Fatal(d.Err())
		}
		d.Next()
	}
}
