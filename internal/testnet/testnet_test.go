package testnet

import (
	"io"
	"testing"
)

func TestTCPPairCarriesBytes(t *testing.T) {
	a, b := TCPPair(t)
	if _, err := a.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(b, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("%q %v", buf, err)
	}
}
