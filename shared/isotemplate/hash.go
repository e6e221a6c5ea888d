package isotemplate

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"strings"
)

// NewHash returns the hash of a source's checksum algorithm (md5, sha1, sha224, sha256, sha384,
// sha512; anything else is sha256, the default), to verify an image Horizon reads itself.
func NewHash(algo string) hash.Hash {
	switch strings.ToLower(algo) {
	case "md5":
		return md5.New()
	case "sha1":
		return sha1.New()
	case "sha224":
		return sha256.New224()
	case "sha384":
		return sha512.New384()
	case "sha512":
		return sha512.New()
	}
	return sha256.New()
}
