package secrets_test

import (
	"fmt"
	"strings"
	"testing"

	"horizon/shared/secrets"
)

// benchLines returns n log lines of 120 bytes shaped like Terraform output; every tenth holds
// one of the secrets when withSecret is set.
func benchLines(n int, secretsList []string, withSecret bool) []string {
	lines := make([]string, n)
	for i := range lines {
		l := fmt.Sprintf("terraform_data.vm[%d] (local-exec): 2026-01-02T03:04:05Z creating VM 1%04d on node pve-%d, status=ok id=%08x ", i%7, i, i%3, i*2654435761)
		if withSecret && i%10 == 0 {
			l += "token=" + secretsList[i%len(secretsList)] + " "
		}
		for len(l) < 120 {
			l += "."
		}
		lines[i] = l[:120]
	}
	return lines
}

func benchSecrets() []string {
	s := make([]string, 10)
	for i := range s {
		s[i] = fmt.Sprintf("s3cr3t-%02d-%s", i, strings.Repeat("x", 12))
	}
	return s
}

// BenchmarkMask reports lines/s for 120-byte lines: the baseline passes lines through an empty
// Masker; the others mask 10 secrets (with all their encodings), without and with matches.
func BenchmarkMask(b *testing.B) {
	list := benchSecrets()
	cases := []struct {
		name       string
		masker     *secrets.Masker
		withSecret bool
	}{
		{"baseline-no-secrets", &secrets.Masker{}, false},
		{"10-secrets-no-match", newMasker(list...), false},
		{"10-secrets-10pct-match", newMasker(list...), true},
	}
	for _, c := range cases {
		lines := benchLines(1024, list, c.withSecret)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(120)
			i := 0
			for b.Loop() {
				_ = c.masker.Mask(lines[i%len(lines)])
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}
