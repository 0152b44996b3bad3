package target

import (
	"crypto/sha256"
	"encoding/hex"
)

// nsIdentity holds the namespace's globally unique identifiers (NVMe Base
// 1.4 §7.11): derived from the subsystem NQN, so that they stay the same
// from one run of a target to the next (hosts such as Linux's match
// namespaces across paths and reconnections by them) and differ between
// subsystems.
type nsIdentity struct {
	nguid [16]byte
	uuid  [16]byte
}

// newNSIdentity derives the identifiers of namespace 1 of subsystem nqn.
func newNSIdentity(nqn string) nsIdentity {
	var id nsIdentity
	h := sha256.Sum256([]byte("nguid\x00" + nqn + "\x00ns1"))
	copy(id.nguid[:], h[:])
	h = sha256.Sum256([]byte("uuid\x00" + nqn + "\x00ns1"))
	copy(id.uuid[:], h[:])
	id.uuid[6] = id.uuid[6]&0x0f | 0x80 // version 8: name-based, custom hash (RFC 9562 §5.8)
	id.uuid[8] = id.uuid[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}

// defaultSerial derives a controller serial number (20 hexadecimal
// digits) from the subsystem NQN.
func defaultSerial(nqn string) string {
	h := sha256.Sum256([]byte("serial\x00" + nqn))
	return hex.EncodeToString(h[:10])
}
