package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"

	"github.com/goiwarp/iwarp/internal/fpdu"
)

// The receiving child of "iwarp benchfpdu": a process of its own, so that
// sender and receiver compete for the two cores as two real peers would.
// It listens on loopback, prints its address, and serves one trial per
// connection until its standard input closes.

// benchChildEnv marks the re-executed child; test binaries check it in an
// init function to become the child without going through main.
const benchChildEnv = "IWARP_BENCHFPDU_CHILD"

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

// runBenchChild is the child's main: it returns the exit status.
func runBenchChild(stdin io.Reader, stdout, stderr io.Writer) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(stderr, "benchfpdu child:", err)
		return 1
	}
	fmt.Fprintln(stdout, ln.Addr().String())
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return 0
			}
			fmt.Fprintln(stderr, "benchfpdu child:", err)
			return 1
		}
		if err := serveTrial(c); err != nil {
			fmt.Fprintln(stderr, "benchfpdu child:", err)
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

// benchChild starts the receiving child and returns its address and a
// function that stops it.
func benchChild() (addr string, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	return startChild(newBenchChildCmd(exe))
}

// startChild starts cmd (this binary in a child role), reads the first
// line it prints (its address), and returns it with a function that stops
// the child by closing its stdin and waits for it. benchfpdu and perf use
// it for their second process; the rest of its output is discarded.
func startChild(cmd *exec.Cmd) (line string, stop func(), err error) {
	line, _, stopErr, err := startChildOutput(cmd, io.Discard)
	if err != nil {
		return "", nil, err
	}
	return line, func() { _ = stopErr() }, nil
}

// startChildOutput starts cmd, returns the first line of its standard
// output and copies the rest to rest; exited is closed when the child has
// closed its output (it exited), stop closes the child's standard input
// and waits for it.
func startChildOutput(cmd *exec.Cmd, rest io.Writer) (line string, exited <-chan struct{}, stop func() error, err error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, nil, err
	}
	br := bufio.NewReader(out)
	line, err = br.ReadString('\n')
	if err != nil {
		in.Close()
		_ = cmd.Wait()
		return "", nil, nil, fmt.Errorf("child %s did not start: %v", cmd.Args[1], err)
	}
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(rest, br)
		close(copied)
	}()
	return strings.TrimSpace(line), copied, func() error {
		in.Close()
		<-copied
		return cmd.Wait()
	}, nil
}
