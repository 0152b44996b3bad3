// Package testnet holds network helpers shared by the test suites.
package testnet

import (
	"net"
	"testing"
)

// TCPPair returns the two ends of a fresh loopback TCP connection (client,
// server). Both are closed when the test ends.
func TCPPair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		ch <- accepted{c, err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		c.Close()
		t.Fatal(r.err)
	}
	client, server = c.(*net.TCPConn), r.c.(*net.TCPConn)
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}
