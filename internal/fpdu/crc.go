package fpdu

import "github.com/goiwarp/iwarp/internal/crc32c"

// CRC32c returns the CRC-32C (Castagnoli) of b: the MPA CRC (RFC 5044 §4.4,
// RFC 3385). On the wire it is stored little-endian.
func CRC32c(b []byte) uint32 {
	return crc32c.Update(0, b)
}

// UpdateCRC32c returns the CRC-32C of the octets covered by crc followed by
// b. UpdateCRC32c(0, b) == CRC32c(b), and the CRC of a concatenation is the
// chain of updates over its parts.
func UpdateCRC32c(crc uint32, b []byte) uint32 {
	return crc32c.Update(crc, b)
}
