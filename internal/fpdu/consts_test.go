package fpdu

import (
	"net"
	"testing"
)

func TestPadLen(t *testing.T) {
	for n, want := range map[int]int{14: 0, 15: 3, 16: 2, 17: 1, 18: 0, 1454: 0, 65535: 3} {
		if got := PadLen(n); got != want || (HeaderLen+n+got)%4 != 0 {
			t.Errorf("PadLen(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestMULPDU checks RFC 5044 §4.1's formula and the clamps.
func TestMULPDU(t *testing.T) {
	cases := []struct {
		emss    int
		markers bool
		want    int
	}{
		{1460, false, 1454},      // 1460 - (6 + 0)
		{1460, true, 1442},       // 1460 - (6 + 4*3 + 0)
		{1448, false, 1442},      // 1448 - 6 (timestamps on)
		{1448, true, 1430},       // 1448 - (6 + 4*3)
		{9000 - 40, false, 8954}, // jumbo frames
		{9000 - 40, true, 8882},  // 8960 - (6 + 4*18)
		{65483, false, 65474},    // loopback: 65483 - (6 + 3)
		{65483, true, 65474 - 4*128},
		{1 << 20, false, 65534}, // clamped: the largest length without PAD
		{10, false, MinULPDU},   // clamped below
	}
	for _, c := range cases {
		got := MULPDU(c.emss, c.markers)
		if got != c.want {
			t.Errorf("MULPDU(%d, %v) = %d, want %d", c.emss, c.markers, got, c.want)
		}
		if PadLen(got) != 0 {
			t.Errorf("MULPDU(%d, %v) = %d needs PAD", c.emss, c.markers, got)
		}
	}
}

// TestEMSS: a TCP connection reports its MSS; anything else the default.
func TestEMSS(t *testing.T) {
	a, _ := tcpPair(t)
	if got := EMSS(a); got < 536 || got > 65535 {
		t.Errorf("EMSS(loopback) = %d", got)
	}
	if got := EMSS(&memConn{}); got != DefaultEMSS {
		t.Errorf("EMSS(memory) = %d", got)
	}
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	if got := EMSS(c1); got != DefaultEMSS {
		t.Errorf("EMSS(pipe) = %d", got)
	}
}
