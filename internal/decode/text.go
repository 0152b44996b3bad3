package decode

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/goiwarp/iwarp/internal/capture"
)

// The text formats of internal/vectors/testdata and interop/captures hold byte
// streams rather than packets. ReadText turns them into TCP connections
// between made-up endpoints, the Initiator at 10.0.0.1 and the Responder at
// 10.0.0.2:7000, so they decode like a capture. Each record (a TSV row, a
// req:/rep: line, a relay log record) becomes one "frame", numbered from 1 in
// file order. Recognised formats:
//
//   - TSV with a header row naming the columns "direction" (I->R or R->I)
//     and "hex" (the frame's bytes): one connection, every row in order
//     (internal/vectors/testdata/*.tsv).
//   - "req: HEX" starts a new connection with bytes from the Initiator;
//     "rep: HEX" adds bytes from the Responder; a line of bare hex bytes
//     counts as "req:" (interop/captures/*.hex).
//   - Relay log records: a line "TIME c2s|s2c off=N len=M" followed by
//     hexdump lines "OFFSET  HEX ... |ASCII|"; c2s is the Initiator; a c2s
//     record at off=0 starts a new connection (captures/transcripts/*.log).
//
// Lines starting with '#' are comments.

// ErrNoStreams is returned by ReadText for a text that holds no byte
// stream in any of the known formats (internal/vectors/testdata/atomics.tsv holds
// operation results, not frames).
var ErrNoStreams = errors.New("decode: no byte streams in this text (no hex column, req:/rep: lines or relay records)")

// Text endpoints.
var (
	textInitiator = netip.MustParseAddr("10.0.0.1")
	textResponder = netip.MustParseAddrPort("10.0.0.2:7000")
)

// MaxTextBytes bounds the bytes ReadText accepts per direction.
const MaxTextBytes = 16 << 20

type textRecord struct {
	initiator bool
	off       int // -1: append
	data      []byte
}

type textConn struct{ recs []textRecord }

var (
	relayHead  = regexp.MustCompile(`^\S+\s+(c2s|s2c)\s+off=(\d+)\s+len=(\d+)`)
	hexdumpRow = regexp.MustCompile(`^[0-9a-fA-F]{8}\s\s((?:[0-9a-fA-F]{2}\s{1,2})+)`)
	bareHex    = regexp.MustCompile(`^(?:[0-9a-fA-F]{2}\s*)+$`)
)

// ReadText reads a vector or hex text and returns its connections
// reassembled (see the format notes above).
func ReadText(r io.Reader) (*capture.Assembler, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4*MaxTextBytes)
	var conns []*textConn
	cur := func() *textConn {
		if len(conns) == 0 {
			conns = append(conns, &textConn{})
		}
		return conns[len(conns)-1]
	}
	newConn := func() *textConn {
		conns = append(conns, &textConn{})
		return conns[len(conns)-1]
	}
	var hexCol, dirCol = -1, -1
	var relay *textRecord
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimRight(sc.Text(), "\r")
		if strings.HasPrefix(s, "#") || strings.TrimSpace(s) == "" {
			continue
		}
		if strings.Contains(s, "\t") {
			cols := strings.Split(s, "\t")
			if hexCol < 0 {
				for i, c := range cols {
					switch c {
					case "hex":
						hexCol = i
					case "direction":
						dirCol = i
					}
				}
				if hexCol >= 0 && dirCol < 0 {
					return nil, fmt.Errorf("decode: line %d: TSV header without a direction column", line)
				}
				continue
			}
			if len(cols) <= max(hexCol, dirCol) {
				return nil, fmt.Errorf("decode: line %d: %d columns, want at least %d", line, len(cols), max(hexCol, dirCol)+1)
			}
			b, err := hex.DecodeString(cols[hexCol])
			if err != nil {
				return nil, fmt.Errorf("decode: line %d: %v", line, err)
			}
			var ini bool
			switch cols[dirCol] {
			case "I->R":
				ini = true
			case "R->I":
			default:
				return nil, fmt.Errorf("decode: line %d: direction %q is neither I->R nor R->I", line, cols[dirCol])
			}
			c := cur()
			c.recs = append(c.recs, textRecord{initiator: ini, off: -1, data: b})
			continue
		}
		if m := relayHead.FindStringSubmatch(s); m != nil {
			off, err1 := strconv.Atoi(m[2])
			if _, err2 := strconv.Atoi(m[3]); err1 != nil || err2 != nil || off > MaxTextBytes {
				return nil, fmt.Errorf("decode: line %d: bad relay record header", line)
			}
			ini := m[1] == "c2s"
			c := cur()
			if ini && off == 0 && c.hasInitiatorData() {
				c = newConn()
			}
			c.recs = append(c.recs, textRecord{initiator: ini, off: off})
			relay = &c.recs[len(c.recs)-1]
			continue
		}
		if m := hexdumpRow.FindStringSubmatch(s); m != nil && relay != nil {
			b, err := hexBytes(m[1])
			if err != nil {
				return nil, fmt.Errorf("decode: line %d: %v", line, err)
			}
			relay.data = append(relay.data, b...)
			continue
		}
		relay = nil
		var body string
		var ini bool
		switch {
		case strings.HasPrefix(s, "req:"):
			body, ini = s[4:], true
		case strings.HasPrefix(s, "rep:"):
			body = s[4:]
		case bareHex.MatchString(s):
			body, ini = s, true
		default:
			continue // prose
		}
		b, err := hexBytes(body)
		if err != nil {
			return nil, fmt.Errorf("decode: line %d: %v", line, err)
		}
		c := cur()
		if ini {
			c = newConn()
		}
		c.recs = append(c.recs, textRecord{initiator: ini, off: -1, data: b})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return assembleText(conns)
}

func (c *textConn) hasInitiatorData() bool {
	for _, r := range c.recs {
		if r.initiator {
			return true
		}
	}
	return false
}

// hexBytes decodes hex digits separated by white space.
func hexBytes(s string) ([]byte, error) {
	return hex.DecodeString(strings.Join(strings.Fields(s), ""))
}

// assembleText feeds the records as TCP segments of made-up connections.
func assembleText(conns []*textConn) (*capture.Assembler, error) {
	a := capture.NewAssembler(capture.Limits{MaxStreamBytes: MaxTextBytes})
	frame := 0
	n := 0
	for _, c := range conns {
		if len(c.recs) == 0 {
			continue
		}
		n++
		ini := netip.AddrPortFrom(textInitiator, uint16(50000+n))
		const isn = 1000
		a.AddSegment(&capture.Segment{Src: ini, Dst: textResponder, Seq: isn, Flags: capture.TCPSyn})
		a.AddSegment(&capture.Segment{Src: textResponder, Dst: ini, Seq: isn, Ack: isn + 1, Flags: capture.TCPSyn | capture.TCPAck})
		var next [2]int
		for _, r := range c.recs {
			frame++
			side, src, dst := 1, textResponder, ini
			if r.initiator {
				side, src, dst = 0, ini, textResponder
			}
			off := r.off
			if off < 0 {
				off = next[side]
			}
			if off+len(r.data) > MaxTextBytes {
				return nil, fmt.Errorf("decode: record %d: stream over %d bytes", frame, MaxTextBytes)
			}
			next[side] = max(next[side], off+len(r.data))
			a.AddSegment(&capture.Segment{Frame: frame, Src: src, Dst: dst, Seq: uint32(isn + 1 + off),
				Flags: capture.TCPAck, Payload: r.data})
		}
	}
	if n == 0 {
		return nil, ErrNoStreams
	}
	a.Flush()
	return a, nil
}
