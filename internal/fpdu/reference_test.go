package fpdu

import "io"

// An independent reference framer and deframer for the differential test
// (differential_test.go), written as plainly as possible from RFC 5044's
// text, one octet at a time, sharing no code with the package but its
// error values and constants' names:
//
//   - §4.1: an FPDU is ULPDU_Length (16 bits, big-endian), the ULPDU, PAD
//     (zero octets making ULPDU_Length, ULPDU and PAD a multiple of 4) and
//     the CRC (32 bits; the CRC32c value stored little-endian, as
//     docs/spec/mpa.md §2 records; 0 when CRCs are off).
//   - §4.3: with markers, a marker precedes every 512th octet of the
//     stream, counted from the first octet of the first FPDU; one due where
//     an FPDU starts precedes its ULPDU_Length. A marker is only sent in
//     front of an octet, so none follows the last FPDU sent.
//   - §4.2: a marker is 16 reserved bits (zero on transmit, ignored on
//     receive) and FPDUPTR, the number of octets from the first octet of
//     the FPDU's ULPDU_Length field to the marker's first octet (16 bits:
//     taken modulo 2^16); its two low bits are zero on transmit and read as
//     zero on receive.
//   - §4.1, §4.4: the CRC covers every octet of the FPDU before the CRC
//     field, markers included.
//
// The receive side reports the first problem in stream order, as the
// package does: a marker whose FPDUPTR does not point at the FPDU's
// ULPDU_Length (ErrMarker), a ULPDU_Length below 14 or above the receive
// bound (ErrULPDUTooShort, ErrULPDUTooLong), a CRC mismatch (ErrCRC), an
// end of the stream inside an FPDU (ErrTruncated), and io.EOF at an end
// between FPDUs.

// refCRC32c is the CRC-32C of b (RFC 3385): reflected polynomial
// 0x82F63B78, initial value and final XOR 0xFFFFFFFF, an octet at a time
// through a table built here from the polynomial.
func refCRC32c(b []byte) uint32 {
	c := ^uint32(0)
	for _, x := range b {
		c = refCRCTable[byte(c)^x] ^ c>>8
	}
	return ^c
}

// refCRCTable[i] is the CRC register after shifting the octet i through
// it bit by bit.
var refCRCTable = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ 0x82F63B78
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
}()

// refFrame appends the FPDU carrying ulpdu to out, the stream so far of
// one direction, and returns the longer stream.
func refFrame(out, ulpdu []byte, markers, crc bool) []byte {
	start := len(out)
	hdr := -1 // stream offset of the ULPDU_Length field, once sent
	put := func(b byte) int {
		if markers && len(out)%512 == 0 {
			ptr := 0
			if hdr >= 0 {
				ptr = len(out) - hdr
			}
			out = append(out, 0, 0, byte(ptr>>8), byte(ptr))
		}
		if hdr < 0 {
			hdr = len(out)
		}
		out = append(out, b)
		return len(out) - 1
	}
	n := len(ulpdu)
	put(byte(n >> 8))
	put(byte(n))
	for _, b := range ulpdu {
		put(b)
	}
	for (2+n)%4 != 0 {
		put(0)
		n++
	}
	var at [4]int
	for i := range at {
		at[i] = put(0)
	}
	var c uint32
	if crc {
		c = refCRC32c(out[start:at[0]])
	}
	for i := range at {
		out[at[i]] = byte(c >> (8 * i))
	}
	return out
}

// refFPDU is one FPDU the reference deframer accepted.
type refFPDU struct {
	ulpdu         []byte
	size, markers int    // octets of the stream, markers in them
	crc, computed uint32 // the trailer and the CRC32c of what it covers
}

// refDeframe reads stream as a receiver with opts does and returns the
// FPDUs it accepts and the error that ends the stream.
func refDeframe(stream []byte, opts Options) ([]refFPDU, error) {
	max := opts.MaxULPDU
	if max <= 0 || max > MaxULPDULen {
		max = MaxULPDULen
	}
	var fpdus []refFPDU
	pos := 0
	for pos < len(stream) {
		start, hdr := pos, -1
		f := refFPDU{}
		// get returns the FPDU's next octet and its stream offset,
		// passing the marker due in front of it.
		get := func() (byte, int, error) {
			if opts.RecvMarkers && pos%512 == 0 {
				if pos+4 > len(stream) {
					return 0, 0, ErrTruncated
				}
				want := 0
				if hdr >= 0 {
					want = (pos - hdr) % 65536
				}
				ptr := int(stream[pos+2])<<8 | int(stream[pos+3])
				pos += 4
				f.markers++
				if ptr&^3 != want {
					return 0, 0, ErrMarker
				}
			}
			if pos >= len(stream) {
				return 0, 0, ErrTruncated
			}
			if hdr < 0 {
				hdr = pos
			}
			pos++
			return stream[pos-1], pos - 1, nil
		}
		read := func(n int) ([]byte, int, error) {
			var b []byte
			first := -1
			for range n {
				x, at, err := get()
				if err != nil {
					return nil, 0, err
				}
				if first < 0 {
					first = at
				}
				b = append(b, x)
			}
			return b, first, nil
		}
		l, _, err := read(2)
		if err != nil {
			return fpdus, err
		}
		n := int(l[0])<<8 | int(l[1])
		if n < 14 {
			return fpdus, ErrULPDUTooShort
		}
		if n > max {
			return fpdus, ErrULPDUTooLong
		}
		if f.ulpdu, _, err = read(n); err != nil {
			return fpdus, err
		}
		if _, _, err = read((4 - (2+n)%4) % 4); err != nil {
			return fpdus, err
		}
		c, at, err := read(4)
		if err != nil {
			return fpdus, err
		}
		f.crc = uint32(c[0]) | uint32(c[1])<<8 | uint32(c[2])<<16 | uint32(c[3])<<24
		f.computed = refCRC32c(stream[start:at])
		if opts.CRC && f.crc != f.computed {
			return fpdus, ErrCRC
		}
		f.size = pos - start
		fpdus = append(fpdus, f)
	}
	return fpdus, io.EOF
}
