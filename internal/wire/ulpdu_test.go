package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestParseULPDUErrors(t *testing.T) {
	rreq := "aabbccdd 0102030405060708 00000040 55667788 1112131415161718"
	atomic := "0000000f 00000001 00002000 0000000000000080 0000000000000001 0000000000000000 0000000000000000 ffffffffffffffff"
	tests := []struct {
		name   string
		ulpdu  string
		err    error
		header HeaderKind
	}{
		{"empty", "", ErrShortDDPHeader, HeaderNone},
		{"RV 0", "41 03 00000000 00000000 00000001 00000000", ErrInvalidRDMAPVersion, HeaderNone},
		{"RV 3", "41 c3 00000000 00000000 00000001 00000000", ErrInvalidRDMAPVersion, HeaderNone},
		{"opcode 0xC", "41 4c 00000000 00000000 00000001 00000000", ErrUnexpectedOpcode, HeaderNone},
		{"V2 opcode under RV 2 undefined", "41 97 00000000 00000000 00000001 00000000", ErrUnexpectedOpcode, HeaderNone},
		{"tagged Read Request", "c1 41 00000001 0000000000000000" + rreq, ErrOpcodeModel, HeaderNone},
		{"Read Request short", "41 41 00000000 00000001 00000001 00000000 aabbccdd", ErrShortRDMAPHeader, HeaderReadRequest},
		{"Read Request with payload", "41 41 00000000 00000001 00000001 00000000" + rreq + "00", ErrRDMAPPayload, HeaderReadRequest},
		{"Immediate 7 bytes", "41 48 00000000 00000000 00000001 00000000 01020304050607", ErrImmediateLength, HeaderImmediate},
		{"Immediate 9 bytes", "41 48 00000000 00000000 00000001 00000000 010203040506070809", ErrImmediateLength, HeaderImmediate},
		{"Send with Immediate last, 0 bytes", "41 93 00000000 00000000 00000001 00000000", ErrImmediateLength, HeaderImmediate},
		{"Atomic unknown AOpCode", "41 4a 00000000 00000001 00000001 00000000" + atomic, ErrUnknownAOpCode, HeaderAtomicRequest},
		{"Terminate short", "41 47 00000000 00000002 00000001 00000000 1201", ErrShortTerminate, HeaderTerminate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := ParseULPDU(mustHex(tc.ulpdu))
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if u.Header != tc.header {
				t.Errorf("header %v, want %v", u.Header, tc.header)
			}
		})
	}
	// The unknown AOpCode request is still decoded for printing.
	u, _ := ParseULPDU(mustHex(tests[11].ulpdu))
	if u.AtomicRequest.AOpCode != 0xF || u.AtomicRequest.STag != 0x2000 || u.DDP.MSN != 1 {
		t.Errorf("fields of the unknown-AOpCode request: %+v", u)
	}
}

// A V2 Send with Immediate segment with L=0 is ordinary payload of any
// length; RV 1 reads control 0x53 as a Send (bit 0x10 reserved).
func TestParseULPDUOpcodeReading(t *testing.T) {
	u, err := ParseULPDU(mustHex("01 93 00000000 00000000 00000001 00000000 010203"))
	if err != nil || u.Header != HeaderNone || len(u.Payload) != 3 || u.Opcode != OpSendImm {
		t.Errorf("L=0 Send with Immediate: %+v, %v", u, err)
	}
	u, err = ParseULPDU(mustHex("41 53 00000000 00000000 00000001 00000000 0102"))
	if err != nil || u.Opcode != OpSend || len(u.Payload) != 2 {
		t.Errorf("RV 1 control 0x53: %+v, %v", u, err)
	}
}

// The transcripts of real siw sessions (interop/captures/transcripts,
// hexdumps of each direction's TCP stream) decode FPDU by FPDU and
// re-encode byte for byte. The MPA Request/Reply (24 bytes each, Rev 2 with
// the IRD/ORD block) is skipped; CRC was off, so each trailer is zero.
func TestTranscripts(t *testing.T) {
	for _, name := range []string{"siw-rping-session.log", "siw-rdma_client-session.log"} {
		streams := readTranscript(t, "../../interop/captures/transcripts/"+name)
		total := 0
		for dir, s := range streams {
			if len(s) < 24 || !bytes.HasPrefix(s, []byte("MPA ID Re")) {
				t.Fatalf("%s %s: no MPA frame at the start", name, dir)
			}
			s = s[24:]
			for len(s) > 0 {
				if len(s) < 2 {
					t.Fatalf("%s %s: stray byte", name, dir)
				}
				n := int(binary.BigEndian.Uint16(s))
				size := 2 + n + (4-(2+n)%4)%4 + 4
				if len(s) < size {
					t.Fatalf("%s %s: truncated FPDU", name, dir)
				}
				if !bytes.Equal(s[size-4:size], []byte{0, 0, 0, 0}) {
					t.Errorf("%s %s: non-zero trailer", name, dir)
				}
				ulpdu := s[2 : 2+n]
				u, err := ParseULPDU(ulpdu)
				if err != nil {
					t.Fatalf("%s %s: ParseULPDU(%x): %v", name, dir, ulpdu, err)
				}
				if _, err := ValidateDDPHeader(&u.DDP, RDMAPVersion1); err != nil {
					t.Errorf("%s %s: %v", name, dir, err)
				}
				if enc := AppendULPDU(nil, &u); !bytes.Equal(enc, ulpdu) {
					t.Errorf("%s %s: re-encoded %x, want %x", name, dir, enc, ulpdu)
				}
				total++
				s = s[size:]
			}
		}
		if total == 0 {
			t.Errorf("%s: no FPDUs", name)
		}
	}
}

// readTranscript returns each direction's byte stream ("c2s", "s2c") from a
// transcript: "TIME DIR off=N len=M" lines followed by hexdump lines.
func readTranscript(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	streams := map[string][]byte{}
	dir := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case len(f) >= 4 && f[2] == "EOF" && strings.HasPrefix(f[3], "total="):
			if want := f[3][len("total="):]; strconv.Itoa(len(streams[f[1]])) != want {
				t.Fatalf("%s: %s stream is %d bytes, transcript says %s", path, f[1], len(streams[f[1]]), want)
			}
			dir = ""
		case len(f) >= 3 && strings.HasPrefix(f[2], "off="):
			dir = f[1]
		case len(f) >= 2 && len(f[0]) == 8 && dir != "":
			for _, w := range f[1:] {
				if len(w) != 2 {
					break
				}
				b, err := hex.DecodeString(w)
				if err != nil {
					break
				}
				streams[dir] = append(streams[dir], b...)
			}
		default:
			dir = ""
		}
	}
	return streams
}
