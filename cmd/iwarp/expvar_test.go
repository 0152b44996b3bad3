package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/goiwarp/iwarp"
)

// TestExpvar: the counters are served as JSON under /debug/vars.
func TestExpvar(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if err := serveExpvar(addr, iwarp.NewDevice(nil)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/vars")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var vars map[string]json.RawMessage
	if err := json.Unmarshal(body, &vars); err != nil {
		t.Fatal(err)
	}
	var s iwarp.DeviceStats
	if err := json.Unmarshal(vars["iwarp_device"], &s); err != nil {
		t.Fatalf("iwarp_device: %v (%s)", err, vars["iwarp_device"])
	}
}
