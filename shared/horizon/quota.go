package horizon

import (
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Resources is what something costs, or may use, in each quota dimension: machines, vCPUs,
// memory in MiB and disk in GiB (Proxmox's own units: its memory and disk sizes are binary).
type Resources struct {
	Machines  int64 `json:"machines"`
	VCPUs     int64 `json:"vcpus"`
	MemoryMiB int64 `json:"memory_mib"`
	DiskGiB   int64 `json:"disk_gib"`
}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	return Resources{Machines: r.Machines + o.Machines, VCPUs: r.VCPUs + o.VCPUs, MemoryMiB: r.MemoryMiB + o.MemoryMiB, DiskGiB: r.DiskGiB + o.DiskGiB}
}

// Sub returns r - o.
func (r Resources) Sub(o Resources) Resources {
	return Resources{Machines: r.Machines - o.Machines, VCPUs: r.VCPUs - o.VCPUs, MemoryMiB: r.MemoryMiB - o.MemoryMiB, DiskGiB: r.DiskGiB - o.DiskGiB}
}

// Dimension names one quota dimension, as the API spells it.
type Dimension string

// The quota dimensions.
const (
	DimMachines  Dimension = "machines"
	DimVCPUs     Dimension = "vcpus"
	DimMemoryMiB Dimension = "memory_mib"
	DimDiskGiB   Dimension = "disk_gib"
)

// Dimensions lists every dimension, in the order the API shows them.
var Dimensions = []Dimension{DimMachines, DimVCPUs, DimMemoryMiB, DimDiskGiB}

// Get returns r's amount in dimension d.
func (r Resources) Get(d Dimension) int64 {
	switch d {
	case DimMachines:
		return r.Machines
	case DimVCPUs:
		return r.VCPUs
	case DimMemoryMiB:
		return r.MemoryMiB
	case DimDiskGiB:
		return r.DiskGiB
	}
	return 0
}

// Unit is how a message names an amount of d ("4 vCPUs", "2048 MiB of memory").
func (d Dimension) Unit(n int64) string {
	switch d {
	case DimMachines:
		if n == 1 {
			return "1 machine"
		}
		return itoa(n) + " machines"
	case DimVCPUs:
		if n == 1 {
			return "1 vCPU"
		}
		return itoa(n) + " vCPUs"
	case DimMemoryMiB:
		return itoa(n) + " MiB of memory"
	case DimDiskGiB:
		return itoa(n) + " GiB of disk"
	}
	return itoa(n)
}

// Limits are a quota: the most a team (or a team in one environment) may use in each
// dimension; nil is unlimited.
type Limits struct {
	Machines  *int64 `json:"machines"`
	VCPUs     *int64 `json:"vcpus"`
	MemoryMiB *int64 `json:"memory_mib"`
	DiskGiB   *int64 `json:"disk_gib"`
}

// Get returns the limit of dimension d, nil when unlimited.
func (l Limits) Get(d Dimension) *int64 {
	switch d {
	case DimMachines:
		return l.Machines
	case DimVCPUs:
		return l.VCPUs
	case DimMemoryMiB:
		return l.MemoryMiB
	case DimDiskGiB:
		return l.DiskGiB
	}
	return nil
}

// Unlimited reports whether no dimension has a limit.
func (l Limits) Unlimited() bool {
	return l.Machines == nil && l.VCPUs == nil && l.MemoryMiB == nil && l.DiskGiB == nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Quota is a team's quotas: Limits over all its stacks, and Environments narrowing the stacks
// of one environment further. Version is 0 while the team has never had one.
type Quota struct {
	TeamID       uuid.UUID
	Limits       Limits
	Environments map[uuid.UUID]Limits
	Version      int64
	UpdatedAt    *time.Time
}

// Unlimited reports whether the quota limits nothing.
func (q Quota) Unlimited() bool {
	if !q.Limits.Unlimited() {
		return false
	}
	for _, l := range q.Environments {
		if !l.Unlimited() {
			return false
		}
	}
	return true
}
