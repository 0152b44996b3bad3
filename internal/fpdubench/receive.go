package fpdubench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/goiwarp/iwarp/internal/fpdu"
)

// Trial kinds.
const (
	trialTCP  = 1 // raw TCP: the same octets, read in bulk
	trialFPDU = 2 // fpdu.Reader: Next, header, payload, End
)

// trialDesc is the 16-octet descriptor that starts each trial connection:
// kind (1), CRC (1), reserved (2), FPDU size on the wire (4), count (8).
type trialDesc struct {
	kind  byte
	crc   bool
	size  int
	count int
}

func (d trialDesc) encode() []byte {
	b := make([]byte, 16)
	b[0] = d.kind
	if d.crc {
		b[1] = 1
	}
	binary.BigEndian.PutUint32(b[4:], uint32(d.size))
	binary.BigEndian.PutUint64(b[8:], uint64(d.count))
	return b
}

func decodeTrialDesc(b []byte) trialDesc {
	return trialDesc{kind: b[0], crc: b[1] == 1, size: int(binary.BigEndian.Uint32(b[4:])), count: int(binary.BigEndian.Uint64(b[8:]))}
}

// ulpduForSize returns the ULPDU length of an FPDU of size octets on the
// wire without markers (the FPDU then needs no PAD, or the least).
func ulpduForSize(size int) int {
	n := size - fpdu.HeaderLen - fpdu.CRCLen
	for fpdu.PadLen(n) != 0 {
		n--
	}
	return min(n, fpdu.MaxULPDULen-1)
}

// Serve is the receiving end: it serves one trial per connection accepted
// on ln, one at a time, until ln is closed. The error of a single trial
// goes to trialErr and Serve carries on.
func Serve(ln net.Listener, trialErr func(error)) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if err := serveTrial(c); err != nil {
			trialErr(err)
		}
		c.Close()
	}
}

// serveTrial receives one trial and acknowledges it with one octet.
func serveTrial(c net.Conn) error {
	var hb [16]byte
	if _, err := io.ReadFull(c, hb[:]); err != nil {
		return err
	}
	d := decodeTrialDesc(hb[:])
	if d.size <= 0 || d.size > 1<<20 || d.count < 0 {
		return fmt.Errorf("bad trial %+v", d)
	}
	var err error
	switch d.kind {
	case trialTCP:
		err = recvTCP(c, d)
	case trialFPDU:
		err = recvFPDU(c, d)
	default:
		err = fmt.Errorf("bad trial kind %d", d.kind)
	}
	if err != nil {
		return err
	}
	_, err = c.Write([]byte{'k'})
	return err
}

// recvTCP reads the trial's octets in bulk into one 64 KiB buffer.
func recvTCP(c net.Conn, d trialDesc) error {
	buf := make([]byte, 64<<10)
	for left := d.size * d.count; left > 0; {
		n, err := c.Read(buf[:min(len(buf), left)])
		if err != nil {
			return err
		}
		left -= n
	}
	return nil
}

// recvFPDU reads the trial's FPDUs as a DDP layer would: the 14-octet
// header into one place, the payload into a 64 KiB "registered" buffer.
func recvFPDU(c net.Conn, d trialDesc) error {
	r := fpdu.NewConn(c, fpdu.Options{CRC: d.crc}).Reader()
	hdr := make([]byte, 14)
	mem := make([]byte, 64<<10)
	for range d.count {
		n, err := r.Next()
		if err == nil {
			err = r.Read(hdr)
		}
		if err == nil {
			err = r.Read(mem[:n-len(hdr)])
		}
		if err == nil {
			err = r.End()
		}
		if err != nil {
			return err
		}
	}
	return nil
}
