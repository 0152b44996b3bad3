package main

import (
	"bufio"
	"bytes"
	"errors"
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
		if err != nil || n == 0 {
			return fmt.Errorf("%q is not a port from 1 to 65535", f)
		}
		*p = append(*p, uint16(n))
	}
	return nil
}

const decodeAbout = `Reads pcap and pcapng captures (Ethernet, Linux cooked, loopback, raw IP;
IPv4 and IPv6), the vector TSVs of internal/vectors/testdata and hex or
relay-log texts, follows each TCP connection from its MPA startup and prints
one line per MPA frame and FPDU (docs/decode.md). Exits 1 if a file cannot
be read, is damaged, or has nothing to decode (no TCP connection, none that
is iWARP, no byte stream in a text).`

// runDecode implements "iwarp decode [options] FILE...".
func runDecode(args []string, stdout, stderr io.Writer) int {
	f := newFlags("decode", "[options] FILE...", decodeAbout, stdout, stderr)
	payload := f.Int("payload", 16, "payload and private data `bytes` shown in hex (0: none; at most 65535)")
	verbose := f.Bool("v", false, "also list the TCP connections that are not iWARP")
	var ports portList
	f.Var(&ports, "port", "decode connections on this TCP `port` as MPA even without a captured startup (repeatable, comma-separated)")
	if code, ok := f.parse(args); !ok {
		return code
	}
	if !f.checkInt("payload", int64(*payload), 0, 65535) {
		return exitUsage
	}
	if f.NArg() == 0 {
		fmt.Fprintln(stderr, "iwarp decode: no FILE given")
		f.usage(stderr)
		return exitUsage
	}
	fs := f.FlagSet
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
// part of the output; an unreadable or damaged file is an error, and so is
// one with nothing to decode (no byte stream, no iWARP connection).
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
			return errNothingToDecode
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
	iwarp := 0
	for _, c := range conns {
		if c.MPA {
			iwarp++
		}
	}
	for _, n := range a.Notes {
		fmt.Fprintf(w, "note: frame %d: %s\n", n.Frame, n.Text)
	}
	if a.DroppedNotes > 0 {
		fmt.Fprintf(w, "note: %d more notes not shown\n", a.DroppedNotes)
	}
	if a.DroppedConns > 0 {
		fmt.Fprintf(w, "note: %d connections beyond the limit were not followed\n", a.DroppedConns)
	}
	switch {
	case readErr != nil:
		return fmt.Errorf("capture damaged after the packets decoded above: %w", readErr)
	case len(conns) == 0:
		return errors.New("nothing to decode: no TCP connection")
	case iwarp == 0:
		return fmt.Errorf("nothing to decode: none of the %d TCP connections is iWARP (-v lists them; -port P decodes port P as MPA)", len(conns))
	}
	return nil
}

// maxTextFile bounds the vector and hex texts read (their hex doubles the
// bytes, and decode.MaxTextBytes bounds each direction).
const maxTextFile = 4 * decode.MaxTextBytes

// errNotDecodable is returned for a file that is neither a capture nor text.
var errNotDecodable = errors.New("not a pcap or pcapng capture, nor a vector or hex text")

// errNothingToDecode is returned for a text that holds no byte stream.
var errNothingToDecode = errors.New("nothing to decode: not a pcap or pcapng capture, and no byte streams in the text (no hex column, req:/rep: lines or relay records)")
