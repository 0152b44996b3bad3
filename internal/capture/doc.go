// Package capture reads packet captures and turns them into TCP byte
// streams: pcap and pcapng file readers, link-layer (Ethernet with VLAN
// tags, Linux cooked SLL and SLL2, BSD loopback, raw IP), IPv4, IPv6 and TCP
// header parsing, and per-connection, per-direction reassembly by sequence
// number. It also writes pcap files with synthesized Ethernet/IP/TCP
// framing, so that tests and tools can capture byte streams for Wireshark.
//
// Everything is standard library only. Parsers never panic on any input,
// and every buffer a hostile file can make the package grow is bounded by
// Limits.
package capture
