package nagios

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// Host is one machine as Nagios monitors it.
type Host struct {
	// Name is the host_name (the machine's name); Address its IP; Alias what the UI shows.
	Name, Address, Alias string
	// Hostgroups it is a member of.
	Hostgroups []string
	// Checks become one service each.
	Checks []Check
}

// Check is one service check: a command the server defines and its arguments.
type Check struct {
	Command string
	Args    []string
}

// FileName is the object file of a stack in the directory Horizon owns on the server.
func FileName(stackID uuid.UUID) string { return "horizon-" + stackID.String() + ".cfg" }

// Render returns the object file of one stack: a host per machine (templates linux-server and
// generic-service, which Debian's nagios4 defines) and a service per check. Names and arguments
// were validated where they were entered (templates, executions): they hold no newline or '!'.
// A service's description is its command, suffixed " 2", " 3"… when a host runs the same
// command more than once.
func Render(stack string, hosts []Host) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by Horizon for stack %s; edits are overwritten at its next deploy.\n", oneLine(stack))
	for _, h := range hosts {
		b.WriteString("\ndefine host {\n")
		field(&b, "use", "linux-server")
		field(&b, "host_name", h.Name)
		field(&b, "alias", oneLine(h.Alias))
		field(&b, "address", h.Address)
		if len(h.Hostgroups) > 0 {
			field(&b, "hostgroups", strings.Join(h.Hostgroups, ","))
		}
		b.WriteString("}\n")
		seen := map[string]int{}
		for _, c := range h.Checks {
			seen[c.Command]++
			desc := c.Command
			if n := seen[c.Command]; n > 1 {
				desc = fmt.Sprintf("%s %d", c.Command, n)
			}
			b.WriteString("\ndefine service {\n")
			field(&b, "use", "generic-service")
			field(&b, "host_name", h.Name)
			field(&b, "service_description", desc)
			field(&b, "check_command", strings.Join(append([]string{c.Command}, c.Args...), "!"))
			b.WriteString("}\n")
		}
	}
	return b.Bytes()
}

func field(b *bytes.Buffer, k, v string) { fmt.Fprintf(b, "  %-20s %s\n", k, v) }

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
