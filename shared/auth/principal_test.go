package auth

import "testing"

func TestTokenScopeOpens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		have, need TokenScope
		want       bool
	}{
		{TokenFull, TokenFull, true},
		{TokenFull, TokenPrometheus, true},
		{TokenDeploy, TokenRead, true},
		{TokenDeploy, TokenFull, false},
		{TokenRead, TokenDeploy, false},
		{TokenRead, TokenPrometheus, true},
		{TokenPrometheus, TokenRead, false},
		{"root", TokenPrometheus, false},
		{TokenFull, "", false},
	}
	for _, tc := range tests {
		if got := tc.have.Opens(tc.need); got != tc.want {
			t.Errorf("%q.Opens(%q) = %v, want %v", tc.have, tc.need, got, tc.want)
		}
	}
}
