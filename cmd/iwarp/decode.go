package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goiwarp/iwarp/internal/capture"
	"github.com/goiwarp/iwarp/internal/decode"
)

func init() {
	register(&command{
		name:  "decode",
		short: "print the MPA frames and FPDUs of pcap/pcapng captures and vector files",
		run:   runDecode,
	})
}

// portList is a repeatable or comma-separated -port flag.
type portList []uint16

// String returns the ports comma-separated (flag.Value).
func (p *portList) String() string {
	s := make([]string, len(*p))
	for i, v := range *p {
		s[i] = strconv.Itoa(int(v))
	}
	return strings.Join(s, ",")
}

// Set adds one or more comma-separated ports (flag.Value).
func (p *portList) Set(v string) error {
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 16)
		if err != nil {
			return fmt.Errorf("bad port %q", f)
		}
		*p = append(*p, uint16(n))
	}
	return nil
}

// runDecode implements "iwarp decode [flags] FILE...".
func runDecode(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	payload := fs.Int("payload", 16, "payload and private data bytes shown in hex (0: none)")
	verbose := fs.Bool("v", false, "also list the TCP connections that are not iWARP")
	var ports portList
	fs.Var(&ports, "port", "decode connections on this TCP `port` as MPA even without a captured startup (repeatable, comma-separated)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: iwarp decode [flags] FILE...")
		fmt.Fprintln(stderr, "FILE is a pcap or pcapng capture, a internal/vectors/testdata TSV file, or a req:/rep: hex or relay log text.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	out := bufio.NewWriterSize(stdout, 64<<10)
	defer out.Flush()
	stdout = out
	status := 0
	for i, name := range fs.Args() {
		if fs.NArg() > 1 {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprintf(stdout, "== %s\n", name)
		}
		if err := decodeFile(name, stdout, decode.Options{Ports: ports},
			decode.RenderOptions{Payload: *payload, Verbose: *verbose}); err != nil {
			out.Flush() // keep the error after the output it follows
			fmt.Fprintf(stderr, "iwarp decode: %s: %v\n", name, err)
			status = 1
		}
	}
	return status
}

// decodeFile decodes one file and prints it. Protocol errors are printed as
// part of the output; only an unreadable file is an error.
func decodeFile(name string, w io.Writer, opts decode.Options, ro decode.RenderOptions) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	magic, _ := br.Peek(4)
	var a *capture.Assembler
	var readErr error
	if capture.IsCapture(magic) {
		r, err := capture.NewReader(br)
		if err != nil {
			return err
		}
		a, readErr = capture.ReadAll(r, capture.Limits{})
	} else {
		data, err := io.ReadAll(io.LimitReader(br, maxTextFile+1))
		if err != nil {
			return err
		}
		if len(data) > maxTextFile {
			return fmt.Errorf("text file over %d bytes", maxTextFile)
		}
		if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
			return errNotDecodable
		}
		a, err = decode.ReadText(bytes.NewReader(data))
		if errors.Is(err, decode.ErrNoStreams) {
			fmt.Fprintf(w, "%s: nothing to decode: no byte streams (no hex column, req:/rep: lines or relay records)\n", name)
			return nil
		}
		if err != nil {
			return err
		}
	}
	conns := make([]*decode.Conn, 0, len(a.Conns()))
	for _, c := range a.Conns() {
		conns = append(conns, decode.Open(c, opts))
	}
	decode.Render(w, conns, ro)
	for _, n := range a.Notes {
		fmt.Fprintf(w, "note: frame %d: %s\n", n.Frame, n.Text)
	}
	if a.DroppedNotes > 0 {
		fmt.Fprintf(w, "note: %d more notes not shown\n", a.DroppedNotes)
	}
	if a.DroppedConns > 0 {
		fmt.Fprintf(w, "note: %d connections beyond the limit were not followed\n", a.DroppedConns)
	}
	if readErr != nil {
		return fmt.Errorf("capture damaged after the packets decoded above: %w", readErr)
	}
	return nil
}

// maxTextFile bounds the vector and hex texts read (their hex doubles the
// bytes, and decode.MaxTextBytes bounds each direction).
const maxTextFile = 4 * decode.MaxTextBytes

// errNotDecodable is returned for a file that is neither a capture nor text.
var errNotDecodable = errors.New("not a pcap or pcapng capture, nor a vector or hex text")
