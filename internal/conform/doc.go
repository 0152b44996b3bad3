// Package conform is the hostile-peer suite: a scripted raw-TCP peer that
// drives an iWARP responder through malformed and abusive input and checks
// what it answers against what the specifications prescribe.
//
// Each Case is one input (a startup variant, then FPDUs built byte by byte)
// with the expected outcome: a Terminate with an exact code (RFC 5040 §4.8,
// RFC 5041 §7.2, RFC 5044 §8, RFC 6581 §9, RFC 7306 and the project's
// decisions where those are silent), acceptance (the connection keeps
// answering), or a refused startup. Run executes one case against any
// responder reachable over TCP (ours, Linux siw, hardware) and reports what
// the peer did; `iwarp conform` prints the whole suite, and the root
// package's hostile tests run it against a real endpoint and also check the
// endpoint's side (canaries, flushed work requests, no leaked goroutines,
// other connections still served).
//
// A responder may advertise memory in its MPA Reply's private data as a
// list of 16-byte entries in rping's encoding ({TO, STag, length},
// big-endian): see Advert. Cases that need an advertised region are skipped,
// with the reason, when the responder advertised none (Linux siw's rping
// server, for instance).
//
// Files: advert.go (the advertisement), build.go (ULPDU builders),
// case.go (Case, Want, Need), cases*.go (the suite), session.go (one
// connection: startup, framing, reading the answer), run.go (the verdict).
package conform
