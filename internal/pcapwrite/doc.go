// Package pcapwrite records TCP byte streams as a classic pcap file with
// synthesized Ethernet, IPv4 or IPv6, and TCP headers, so that a program can
// capture its own iWARP traffic without the privileges a packet capture
// needs, and read it with Wireshark, tshark or `iwarp decode`.
//
// A Writer owns the file; a Flow is one TCP connection in it, started with a
// three-way handshake, carrying the bytes each side sends in segments of at
// most the configured MSS with consistent sequence and acknowledgement
// numbers and correct checksums, and ended with FIN segments. Conn wraps a
// net.Conn so that everything read and written on it is recorded in a Flow
// with the connection's real addresses and the times of the calls.
//
// The link type is LINKTYPE_ETHERNET (1), with fixed locally administered
// MAC addresses; timestamps have nanosecond resolution. The package uses the
// standard library only and imports nothing of the protocol stack.
package pcapwrite
