package fpdubench

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/goiwarp/iwarp/internal/bench"
	"github.com/goiwarp/iwarp/internal/fpdu"
)

// Measure runs case c against the receiver at addr (Serve): it sizes the
// trials to last about trial each, then runs pairs interleaved pairs of
// trials (raw TCP and FPDUs, alternating which goes first) and returns the
// medians.
func Measure(addr string, c Case, pairs int, trial time.Duration) (Result, error) {
	if pairs < 1 || trial <= 0 {
		return Result{}, fmt.Errorf("%d pairs of %v trials: nothing to measure", pairs, trial)
	}
	count := max(64, (4<<20)/c.Size)
	d, err := runTrial(addr, trialDesc{kind: trialFPDU, crc: c.CRC, size: c.Size, count: count})
	if err != nil {
		return Result{}, err
	}
	count = max(64, int(float64(count)*float64(trial)/float64(max(d, time.Microsecond))))
	var ratios, tcps, fpdus []float64
	for i := range pairs {
		kinds := []byte{trialTCP, trialFPDU}
		if i%2 == 1 {
			kinds[0], kinds[1] = kinds[1], kinds[0]
		}
		var dt [3]time.Duration
		for _, k := range kinds {
			d, err := runTrial(addr, trialDesc{kind: k, crc: c.CRC, size: c.Size, count: count})
			if err != nil {
				return Result{}, err
			}
			dt[k] = d
		}
		octets := float64(c.Size * count)
		tcp, fp := octets/dt[trialTCP].Seconds(), octets/dt[trialFPDU].Seconds()
		tcps, fpdus = append(tcps, tcp/1e6), append(fpdus, fp/1e6)
		ratios = append(ratios, fp/tcp)
	}
	fp := bench.Median(fpdus)
	return Result{
		TCPMBps:     bench.Median(tcps),
		FPDUMBps:    fp,
		Ratio:       bench.Median(ratios),
		FPDUsPerSec: fp * 1e6 / float64(c.Size),
	}, nil
}

// runTrial sends one trial to the receiver and returns the time from the
// first octet sent to the receiver's acknowledgement.
func runTrial(addr string, d trialDesc) (time.Duration, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	tc := c.(*net.TCPConn)
	if err := tc.SetNoDelay(true); err != nil {
		return 0, err
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := c.Write(d.encode()); err != nil {
		return 0, err
	}
	// Both kinds write the same octets in the same batches: about 16 KiB,
	// or one FPDU when larger, per system call.
	batch := max(1, (16<<10)/d.size)
	start := time.Now()
	if d.kind == trialTCP {
		err = sendTCP(c, d, batch)
	} else {
		err = sendFPDU(c, d, batch)
	}
	if err != nil {
		return 0, err
	}
	var ack [1]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil {
		return 0, fmt.Errorf("no acknowledgement: %v", err)
	}
	return time.Since(start), nil
}

// sendTCP writes count messages of d.size octets, batch per Write.
func sendTCP(c net.Conn, d trialDesc, batch int) error {
	buf := make([]byte, d.size*batch)
	for i := 0; i < d.count; i += batch {
		if _, err := c.Write(buf[:d.size*min(batch, d.count-i)]); err != nil {
			return err
		}
	}
	return nil
}

// sendFPDU frames count FPDUs of d.size octets on the wire (a 14-octet
// header and the payload), batch per Flush.
func sendFPDU(c net.Conn, d trialDesc, batch int) error {
	w := fpdu.NewConn(c, fpdu.Options{CRC: d.crc}).Writer()
	ulpdu := ulpduForSize(d.size)
	hdr, payload := make([]byte, 14), make([]byte, ulpdu-14)
	for i := range d.count {
		if err := w.Append(hdr, payload); err != nil {
			return err
		}
		if (i+1)%batch == 0 || i == d.count-1 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}
