package nvme

import (
	"bytes"
	"reflect"
	"testing"
)

// The fuzz targets decode arbitrary octets, which must never panic, and
// check that encoding what was decoded gives the input back where every
// octet is a field (SQE, CQE, SGL), or that encoding is a fixed point
// where decoding normalises (strings, reserved octets). Targets of large
// structures pad short inputs to full size, so that every input goes
// through the whole decoder (short inputs are the unit tests' business).
// Go's engine minimises each new interesting input for up to a minute,
// which for kilobyte inputs stalls fuzzing: run FuzzConnectData,
// FuzzDiscoveryLog and FuzzIdentify with -fuzzminimizetime 0 (or a few
// seconds), e.g.
//
//	go test -run X -fuzz FuzzDiscoveryLog -fuzztime 10s -fuzzminimizetime 0 ./internal/nvme/

// padTo returns in, zero-padded to at least n octets.
func padTo(in []byte, n int) []byte {
	if len(in) >= n {
		return in
	}
	return append(in, make([]byte, n-len(in))...)
}

func FuzzCommand(f *testing.F) {
	f.Add(bytes.Repeat([]byte{0}, SQELen))
	f.Add(make([]byte, 3))
	var b [SQELen]byte
	c := Connect{SQSIZE: 31, KATO: 5000}.Command(1, KeyedSGL(0x1000, 1024, 7))
	_ = c.Encode(b[:])
	f.Add(b[:])
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := DecodeCommand(in)
		if err != nil {
			if len(in) >= SQELen {
				t.Fatalf("%d octets: %v", len(in), err)
			}
			return
		}
		out := make([]byte, SQELen)
		if err := c.Encode(out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, in[:SQELen]) {
			t.Fatalf("round trip\n%x\n%x", out, in[:SQELen])
		}
		// The accessors take any value.
		_, _ = c.DPTR.Classify()
		_ = c.CheckFlags()
		_, _, _, _ = c.Connect(), c.Property().Size(), c.GetLogPage().Length(), c.Identify()
		_, _, _, _ = c.Feature(), c.RW().Blocks(), c.DSM().Ranges(), c.Abort()
		_ = c.DataDirection()
		_ = OpcodeName(c.Opcode, true) + OpcodeName(c.Opcode, false) + FCTypeName(c.FCType())
	})
}

func FuzzCompletion(f *testing.F) {
	f.Add(make([]byte, CQELen))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0x81})
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := DecodeCompletion(in)
		if err != nil {
			if len(in) >= CQELen {
				t.Fatal(err)
			}
			return
		}
		out := make([]byte, CQELen)
		_ = c.Encode(out)
		if !bytes.Equal(out, in[:CQELen]) {
			t.Fatalf("round trip %x %x", out, in[:CQELen])
		}
		s := c.Status
		if MakeStatus(s.SCT(), s.SC()) != s.Code() || s.String() == "" {
			t.Fatalf("status %#x", uint16(s))
		}
	})
}

func FuzzSGL(f *testing.F) {
	for _, d := range []SGL{KeyedSGL(1, 2, 3), KeyedSGLInvalidate(4, 5, 6), InlineSGL(0, 4096), {15: 0x20}, {15: 0x30}} {
		f.Add(d[:], 4096)
	}
	f.Fuzz(func(t *testing.T, in []byte, have int) {
		var d SGL
		copy(d[:], in)
		kind, st := d.Classify()
		if (kind == SGLInvalid) == (st == StatusSuccess) {
			t.Fatalf("%x: kind %d status %v", d, kind, st)
		}
		switch kind {
		case SGLKeyed:
			if KeyedSGL(d.Address(), d.Length(), d.Key()) != d {
				t.Fatalf("keyed %x", d)
			}
		case SGLKeyedInvalidate:
			if KeyedSGLInvalidate(d.Address(), d.Length(), d.Key()) != d {
				t.Fatalf("invalidate %x", d)
			}
		case SGLInCapsule:
			if r := InlineSGL(d.Address(), d.Length()); [12]byte(r[:12]) != [12]byte(d[:12]) || r[15] != d[15] {
				t.Fatalf("in-capsule %x", d)
			}
			st := d.CheckInCapsule(have)
			if st == StatusSuccess && (have < 0 || d.Address()+uint64(d.Length()) > uint64(have)) {
				t.Fatalf("%x accepted for %d octets", d, have)
			}
		}
	})
}

func FuzzConnectData(f *testing.F) {
	d := ConnectData{CNTLID: 0xFFFF, SUBNQN: "nqn.a", HOSTNQN: "nqn.b"}
	b := make([]byte, ConnectDataLen)
	_ = d.Encode(b)
	f.Add(b)
	f.Add(make([]byte, 100))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := DecodeConnectData(padTo(in, ConnectDataLen))
		if err != nil {
			return // an unterminated NQN
		}
		out := make([]byte, ConnectDataLen)
		if err := d.Encode(out); err != nil {
			t.Fatal(err)
		}
		d2, err := DecodeConnectData(out)
		if err != nil || d2 != d {
			t.Fatalf("round trip %+v %+v %v", d, d2, err)
		}
		_ = CheckNQN(d.SUBNQN)
	})
}

func FuzzCMPrivateData(f *testing.F) {
	f.Add(make([]byte, CMRequestLen))
	f.Add([]byte{0, 0, 4, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		out := make([]byte, CMRequestLen)
		if r, err := DecodeCMRequest(in); err == nil {
			_ = r.Encode(out)
			if !bytes.Equal(out[:10], in[:10]) {
				t.Fatalf("request %x %x", out, in)
			}
		} else if _, ok := err.(CMStatus); !ok {
			t.Fatalf("request error %T", err)
		}
		if r, err := DecodeCMReply(in); err == nil {
			_ = r.Encode(out)
			if !bytes.Equal(out[:4], in[:4]) {
				t.Fatalf("reply %x %x", out, in)
			}
		}
		if r, err := DecodeCMReject(in); err == nil {
			_ = r.Encode(out)
			if !bytes.Equal(out[:4], in[:4]) || r.STS.String() == "" {
				t.Fatalf("reject %x %x", out, in)
			}
		}
	})
}

func FuzzDiscoveryLog(f *testing.F) {
	l := DiscoveryLog{GENCTR: 1, NUMREC: 1, Entries: []DiscoveryEntry{{TRTYPE: 1, TRSVCID: "4420", TRADDR: "10.0.0.1", SUBNQN: "nqn.x"}}}
	b := make([]byte, l.Len())
	_ = l.Encode(b)
	f.Add(b)
	f.Add(b[:1024])
	f.Fuzz(func(t *testing.T, in []byte) {
		l, err := DecodeDiscoveryLog(padTo(in, DiscoveryHeaderLen+2*DiscoveryEntryLen))
		if err != nil {
			t.Fatal(err)
		}
		// Encoding is a fixed point after one decode.
		e1 := make([]byte, l.Len())
		if err := l.Encode(e1); err != nil {
			t.Fatal(err)
		}
		l2, err := DecodeDiscoveryLog(e1)
		if err != nil {
			t.Fatal(err)
		}
		e2 := make([]byte, l2.Len())
		_ = l2.Encode(e2)
		if !bytes.Equal(e1, e2) {
			t.Fatal("encode not a fixed point")
		}
		if uint64(len(l.Entries)) > l.NUMREC {
			t.Fatalf("%d entries, NUMREC %d", len(l.Entries), l.NUMREC)
		}
	})
}

func FuzzIdentify(f *testing.F) {
	f.Add(make([]byte, IdentifyLen))
	f.Fuzz(func(t *testing.T, in []byte) {
		in = padTo(in, IdentifyLen)
		c, _ := DecodeController(in)
		e1 := make([]byte, IdentifyLen)
		_ = c.Encode(e1)
		c2, _ := DecodeController(e1)
		e2 := make([]byte, IdentifyLen)
		_ = c2.Encode(e2)
		if !bytes.Equal(e1, e2) {
			t.Fatal("controller: encode not a fixed point")
		}
		n, _ := DecodeNamespace(in)
		_ = n.Encode(e1)
		n2, _ := DecodeNamespace(e1)
		if !reflect.DeepEqual(n, n2) {
			t.Fatal("namespace round trip")
		}
		_ = n.BlockSize()
		descs, _ := DecodeNSDescList(in)
		if err := EncodeNSDescList(e1, descs); err != nil {
			t.Fatal(err)
		}
		if d2, _ := DecodeNSDescList(e1); !reflect.DeepEqual(descs, d2) {
			t.Fatal("descriptor list round trip")
		}
		ids, _ := DecodeNSList(nil, in)
		_ = ids
	})
}
