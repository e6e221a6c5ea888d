package terraform

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestErrorLeadsWithTerraformsOwnReason(t *testing.T) {
	plain := "exit status 1\n" + `There are some problems with the CLI configuration:
╷
│ Warning: Unable to open CLI configuration file
│
│ The CLI configuration file at "/root/.terraformrc" does not exist.
╵


Error: local-exec provisioner error

  with terraform_data.vm,
  on main.tf line 3, in resource "terraform_data" "vm":
   3:   provisioner "local-exec" {

Error running command 'echo first; echo 'db module is broken at this commit'
>&2; exit 3': exit status 3. Output: first
db module is broken at this commit

`
	boxed := "exit status 1\n" + `╷
│ Error: Invalid value for variable
│
│   on variables.tf line 1:
│    1: variable "cores" {
│
│ cores must be between 1 and 8.
╵
╷
│ Error: second problem
╵
`
	wrapped := "exit status 1\n" + `
Error: local-exec provisioner error

  with terraform_data.broken,
  on main.tf line 2, in resource "terraform_data" "broken":
   2:   provisioner "local-exec" {

Error running command 'echo 'db module is broken at this commit' >&2; exit
1': exit status 1. Output: db module is broken at this commit

`
	// Terraform wrapped Proxmox's answer at its width.
	permission := "exit status 1\n" + `
Error: local-exec provisioner error

  with terraform_data.vm,
  on main.tf line 62, in resource "terraform_data" "vm":
  62:   provisioner "local-exec" {

Error running command 'bash './pve-vm.sh' create': exit status 1. Output:
pve-vm: creating VM 101 (revoked-db-0) on pve1
pve-vm: error: create VM 101 on pve1: Permission check failed (/vms/101,
VM.Allocate)

`
	tests := []struct {
		name, stderr, want string
	}{
		{"provisioner", plain, "local-exec provisioner error: db module is broken at this commit (terraform apply: exit status 1)"},
		{"boxed, first of two", boxed, "Invalid value for variable: cores must be between 1 and 8. (terraform apply: exit status 1)"},
		{"output on the wrapped command's line", wrapped, "local-exec provisioner error: db module is broken at this commit (terraform apply: exit status 1)"},
		{"a wrapped last line", permission, "local-exec provisioner error: pve-vm: error: create VM 101 on pve1: Permission check failed (/vms/101, VM.Allocate) (terraform apply: exit status 1)"},
		{"no diagnostic", "exit status 1\nsegmentation fault\n", "terraform apply: exit status 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cause := errors.New(tt.stderr)
			err := failed(context.Background(), "terraform apply", cause)
			first, rest, _ := strings.Cut(err.Error(), "\n")
			if first != tt.want {
				t.Fatalf("first line %q, want %q", first, tt.want)
			}
			if !errors.Is(err, cause) || !strings.Contains(rest, "segmentation fault") && tt.name == "no diagnostic" {
				t.Fatalf("the error lost its cause or Terraform's output: %q", err)
			}
		})
	}
	if failed(context.Background(), "terraform apply", nil) != nil {
		t.Fatal("no error became an error")
	}
}
