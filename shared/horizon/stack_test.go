package horizon

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

func TestVMName(t *testing.T) {
	long95 := strings.Repeat("very long stack name ", 5)[:95]
	tests := []struct {
		stack, job string
		index      int
		want       string
	}{
		{"Web Shop", "db", 0, "web-shop-db-0"},
		{"--Ünïcode !! stack--", "app", 12, "n-code-stack-app-12"},
		{"!!!", "db", 1, "db-1"},
		{strings.Repeat("a", 50), "db", 3, strings.Repeat("a", 50) + "-db-3"},
	}
	for _, tt := range tests {
		if got := VMName(tt.stack, tt.job, tt.index); got != tt.want {
			t.Errorf("VMName(%q, %q, %d) = %q, want %q", tt.stack, tt.job, tt.index, got, tt.want)
		}
	}

	// A name at the length limit keeps job and index, so the machines of one stack differ,
	// and two long names that differ only past the cut differ too.
	seen := map[string]string{}
	for _, stack := range []string{long95, long95[:94] + "x", strings.Repeat("b", 100)} {
		for _, job := range []string{"db", strings.Repeat("j", 32)} {
			for i := range 3 {
				name := VMName(stack, job, i)
				if !dnsLabel.MatchString(name) {
					t.Errorf("VMName(%q, %q, %d) = %q: not a DNS label", stack, job, i, name)
				}
				if !strings.HasSuffix(name, "-"+job+"-"+string(rune('0'+i))) {
					t.Errorf("VMName(%q, %q, %d) = %q: job and index lost", stack, job, i, name)
				}
				if other, dup := seen[name]; dup {
					t.Errorf("%q names both %s and %q/%s/%d", name, other, stack, job, i)
				}
				seen[name] = stack + "/" + job
			}
		}
	}
}

func TestVMTagsNameTheWholeStackID(t *testing.T) {
	// Two UUIDv7 made in the same minute share their first 8 hex digits: the tag must not.
	a, b := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	ta, tb := VMTags(Stack{ID: a}), VMTags(Stack{ID: b})
	if ta[1] == tb[1] {
		t.Fatalf("stacks %s and %s share the tag %q", a, b, ta[1])
	}
	if ta[1] != "stack-"+a.String() {
		t.Fatalf("tag %q, want stack-%s", ta[1], a)
	}
}
