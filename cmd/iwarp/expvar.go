package main

import (
	"expvar"
	"net"
	"net/http"

	"github.com/goiwarp/iwarp"
)

// serveExpvar publishes dev's counters as the expvar variable
// "iwarp_device" and serves /debug/vars on addr in the background.
func serveExpvar(addr string, dev *iwarp.Device) error {
	expvar.Publish("iwarp_device", expvar.Func(func() any { return dev.Stats() }))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(ln, http.DefaultServeMux) }()
	return nil
}
