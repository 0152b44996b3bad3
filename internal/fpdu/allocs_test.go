package fpdu

import "testing"

// TestAllocsLoopback: sending and receiving one FPDU over loopback TCP
// allocates nothing in steady state, for payloads of 0, 64 B, 4 KiB and
// MULPDU, CRC and markers on and off.
func TestAllocsLoopback(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	for _, crc := range []bool{false, true} {
		for _, markers := range []bool{false, true} {
			opts := Options{CRC: crc, SendMarkers: markers, RecvMarkers: markers}
			a, b := tcpPair(t)
			_ = b.SetReadBuffer(1 << 20)
			_ = a.SetWriteBuffer(1 << 20)
			deadline(a)
			deadline(b)
			w, r := NewConn(a, opts).Writer(), NewConn(b, opts).Reader()
			mulpdu := MULPDU(EMSS(a), markers)
			for _, size := range []int{0, 64, 4096, mulpdu - 14} {
				hdr := make([]byte, 14)
				payload := make([]byte, size)
				buf := make([]byte, 14+size)
				var err error
				round := func() {
					if err != nil {
						return
					}
					if err = w.WriteFPDU(hdr, payload); err != nil {
						return
					}
					var n int
					if n, err = r.Next(); err != nil {
						return
					}
					if err = r.Read(buf[:14]); err != nil {
						return
					}
					if err = r.Read(buf[14:n]); err != nil {
						return
					}
					err = r.End()
				}
				for range 10 {
					round()
				}
				allocs := testing.AllocsPerRun(200, round)
				if err != nil {
					t.Fatal(err)
				}
				if allocs != 0 {
					t.Errorf("crc=%v markers=%v size=%d: %v allocations per FPDU", crc, markers, size, allocs)
				}
			}
		}
	}
}

// TestAllocsBatch: a batch of small FPDUs with one Flush, read back from
// the staging buffer, allocates nothing.
func TestAllocsBatch(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	a, b := tcpPair(t)
	deadline(a)
	deadline(b)
	w, r := NewConn(a, Options{CRC: true}).Writer(), NewConn(b, Options{CRC: true}).Reader()
	hdr, payload, buf := make([]byte, 18), make([]byte, 64), make([]byte, 82)
	var err error
	round := func() {
		for range 32 {
			if err == nil {
				err = w.Append(hdr, payload)
			}
		}
		if err == nil {
			err = w.Flush()
		}
		for range 32 {
			if err != nil {
				return
			}
			if _, err = r.Next(); err == nil {
				if err = r.Read(buf); err == nil {
					err = r.End()
				}
			}
		}
	}
	round()
	if allocs := testing.AllocsPerRun(100, round); allocs != 0 || err != nil {
		t.Errorf("%v allocations per batch (%v)", allocs, err)
	}
}
