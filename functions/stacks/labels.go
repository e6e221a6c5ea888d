package stacks

import (
	"fmt"
	"regexp"

	"horizon/shared/horizon"
)

// labelPattern is what Proxmox accepts as a tag (labels are written to VMs as tags).
var labelPattern = regexp.MustCompile(`^[a-z0-9_][a-z0-9_\-+.]{0,63}$`)

func checkLabels(p *horizon.Problems, labels []string) {
	seen := map[string]bool{}
	for i, l := range labels {
		f := fmt.Sprintf("labels[%d]", i)
		switch {
		case !labelPattern.MatchString(l):
			p.Add(f, "must be a Proxmox tag: lower-case letters, digits and _-+. (at most 64)")
		case seen[l]:
			p.Add(f, "is listed twice")
		}
		seen[l] = true
	}
	if len(labels) > 32 {
		p.Add("labels", "must be at most 32")
	}
}
