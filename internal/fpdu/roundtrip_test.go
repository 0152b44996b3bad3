package fpdu

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// testULPDUs returns ULPDUs of 14, 15, mulpdu-1 and mulpdu octets (a
// 14-octet header and payloads of 0, 1, mulpdu-15 and mulpdu-14), twice,
// with pseudo-random content.
func testULPDUs(mulpdu int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 7))
	var out [][]byte
	for range 2 {
		for _, n := range []int{14, 15, mulpdu - 1, mulpdu} {
			u := make([]byte, n)
			for i := range u {
				u[i] = byte(r.Uint32())
			}
			out = append(out, u)
		}
	}
	return out
}

// sendULPDUs writes ulpdus, one Flush per FPDU except for a batch of the
// small ones.
func sendULPDUs(w *Writer, ulpdus [][]byte) error {
	for i, u := range ulpdus {
		if err := w.Append(u[:14], u[14:]); err != nil {
			return err
		}
		if len(u) > 15 || i%4 == 1 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
	return w.Flush()
}

// recvULPDUs reads len(want) FPDUs, each as its 14-octet header then the
// rest in one Read (a direct read when large), and compares.
func recvULPDUs(r *Reader, want [][]byte) error {
	for i, u := range want {
		n, err := r.Next()
		if err != nil {
			return fmt.Errorf("FPDU %d: Next: %w", i, err)
		}
		if n != len(u) {
			return fmt.Errorf("FPDU %d: length %d, want %d", i, n, len(u))
		}
		got := make([]byte, n)
		if err := r.Read(got[:14]); err != nil {
			return fmt.Errorf("FPDU %d: %w", i, err)
		}
		if err := r.Read(got[14:]); err != nil {
			return fmt.Errorf("FPDU %d: %w", i, err)
		}
		if err := r.End(); err != nil {
			return fmt.Errorf("FPDU %d: End: %w", i, err)
		}
		if string(got) != string(u) {
			return fmt.Errorf("FPDU %d: ULPDU differs", i)
		}
	}
	return nil
}

// framingCombos are the option pairs of the two ends: CRC on and off,
// markers on and off in each direction.
func framingCombos() (out [][2]Options) {
	for _, crc := range []bool{false, true} {
		for _, ab := range []bool{false, true} {
			for _, ba := range []bool{false, true} {
				out = append(out, [2]Options{
					{CRC: crc, SendMarkers: ab, RecvMarkers: ba},
					{CRC: crc, SendMarkers: ba, RecvMarkers: ab},
				})
			}
		}
	}
	return out
}

// TestRoundTripTCP sends FPDUs both ways at once over loopback TCP, for
// every framing combination, sized from the connection's EMSS.
func TestRoundTripTCP(t *testing.T) {
	for _, o := range framingCombos() {
		name := fmt.Sprintf("crc=%v/markersAB=%v/markersBA=%v", o[0].CRC, o[0].SendMarkers, o[1].SendMarkers)
		t.Run(name, func(t *testing.T) {
			a, b := tcpPair(t)
			deadline(a)
			deadline(b)
			ca, cb := NewConn(a, o[0]), NewConn(b, o[1])
			ab := testULPDUs(MULPDU(EMSS(a), o[0].SendMarkers), 1)
			ba := testULPDUs(MULPDU(EMSS(b), o[1].SendMarkers), 2)
			var wg sync.WaitGroup
			errs := make([]error, 4)
			wg.Add(4)
			go func() { defer wg.Done(); errs[0] = sendULPDUs(ca.Writer(), ab) }()
			go func() { defer wg.Done(); errs[1] = sendULPDUs(cb.Writer(), ba) }()
			go func() { defer wg.Done(); errs[2] = recvULPDUs(cb.Reader(), ab) }()
			go func() { defer wg.Done(); errs[3] = recvULPDUs(ca.Reader(), ba) }()
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			a.CloseWrite()
			if _, err := cb.Reader().Next(); err != io.EOF {
				t.Errorf("after close: %v, want io.EOF", err)
			}
		})
	}
}

// TestRoundTripSplits frames with the Writer and reads the stream back
// through arbitrary read splits, for every framing combination and the
// MULPDUs of an Ethernet and a loopback MSS.
func TestRoundTripSplits(t *testing.T) {
	for _, o := range framingCombos() {
		for _, emss := range []int{DefaultEMSS, 65483} {
			want := testULPDUs(MULPDU(emss, o[0].SendMarkers), uint64(emss))
			mc := &memConn{}
			if err := sendULPDUs(NewConn(mc, o[0]).Writer(), want); err != nil {
				t.Fatal(err)
			}
			for seed := range uint64(8) {
				in := &memConn{in: mc.out, split: randomSplit(seed)}
				if err := recvULPDUs(NewConn(in, o[1]).Reader(), want); err != nil {
					t.Fatalf("%+v emss %d seed %d: %v", o, emss, seed, err)
				}
				if _, err := NewConn(in, o[1]).Reader().Next(); err != io.EOF {
					t.Fatalf("trailing octets: %v", err)
				}
			}
		}
	}
}

// TestHoldSendUntilReceive: the Responder's Flush waits for the first FPDU
// header from the Initiator.
func TestHoldSendUntilReceive(t *testing.T) {
	ini, resp := tcpPair(t)
	deadline(ini)
	deadline(resp)
	rc := NewConn(resp, Options{CRC: true, HoldSendUntilReceive: true})
	ic := NewConn(ini, Options{CRC: true})
	u := testULPDUs(100, 3)[2]
	done := make(chan error, 1)
	go func() { done <- rc.Writer().WriteFPDU(u[:14], u[14:]) }()

	// Nothing may arrive while the Initiator has sent nothing.
	_ = ini.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	if n, err := ini.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Responder sent early: %d %v", n, err)
	}
	select {
	case err := <-done:
		t.Fatalf("Flush returned before the first FPDU: %v", err)
	default:
	}
	deadline(ini)
	if err := ic.Writer().WriteFPDU(u[:14], u[14:]); err != nil {
		t.Fatal(err)
	}
	if err := recvULPDUs(rc.Reader(), [][]byte{u}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := recvULPDUs(ic.Reader(), [][]byte{u}); err != nil {
		t.Fatal(err)
	}
}

// TestHoldReleasedByClose: Close wakes a held Flush with net.ErrClosed.
func TestHoldReleasedByClose(t *testing.T) {
	_, resp := tcpPair(t)
	rc := NewConn(resp, Options{HoldSendUntilReceive: true})
	done := make(chan error, 1)
	go func() { done <- rc.Writer().WriteFPDU(make([]byte, 20)) }()
	rc.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("held Flush after Close: %v", err)
	}
}

// TestNextDeadlineRetry: a read deadline that expires before any octet of
// the next FPDU is not sticky.
func TestNextDeadlineRetry(t *testing.T) {
	a, b := tcpPair(t)
	r := NewConn(b, Options{}).Reader()
	_ = b.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := r.Next(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Next past deadline: %v", err)
	}
	deadline(a)
	deadline(b)
	u := testULPDUs(100, 4)[3]
	if err := NewConn(a, Options{}).Writer().WriteFPDU(u); err != nil {
		t.Fatal(err)
	}
	if err := recvULPDUs(r, [][]byte{u}); err != nil {
		t.Fatal(err)
	}
}
