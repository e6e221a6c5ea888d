package horizon

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// ISOKind says what an ISO template builds.
type ISOKind string

const (
	// ISOKindISO downloads an installer image onto a storage with content "iso".
	ISOKindISO ISOKind = "iso"
	// ISOKindCloudImage runs the image pipeline: download a cloud image, build a VM from it
	// (UEFI, TPM, disk import and resize, GPU, cloud-init), convert it to a template, clone it.
	ISOKindCloudImage ISOKind = "cloud-image"
)

// ISOTemplate is a catalogue entry ISOs are built from, with numbered immutable versions like
// Template. Its kind does not change across versions.
type ISOTemplate struct {
	ID            uuid.UUID
	Name          string
	Description   string
	Kind          ISOKind
	Active        bool
	LatestVersion int
	CreatedBy     *uuid.UUID
	Version       int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Versions lists the versions, oldest first, when the store was asked for them.
	Versions []ISOTemplateVersionSummary
}

// ISOTemplateVersionSummary is what an ISO template's detail lists of each version.
type ISOTemplateVersionSummary struct {
	Number    int
	SpecHash  string
	CreatedBy *uuid.UUID
	CreatedAt time.Time
}

// ISOTemplateVersion is one immutable version of an ISO template: its spec, as the canonical
// JSON of shared/isotemplate's Spec (which this package cannot name), and its hash.
type ISOTemplateVersion struct {
	ISOTemplateID uuid.UUID
	Number        int
	Spec          json.RawMessage
	SpecHash      string
	CreatedBy     *uuid.UUID
	CreatedAt     time.Time
}

// ISOState is an ISO's lifecycle state. The names are API.
type ISOState string

const (
	ISOBuilding ISOState = "building"
	ISOBuilt    ISOState = "built"
	ISOFailed   ISOState = "failed"
	ISORemoving ISOState = "removing"
	ISORemoved  ISOState = "removed"
)

// Busy reports whether a run is in progress on an ISO in this state.
func (s ISOState) Busy() bool { return s == ISOBuilding || s == ISORemoving }

// ISO is one build of an ISO template version on a Proxmox node, and what it produced.
// ConfigHash identifies what the next run builds (the version's spec and the placement);
// BuiltHash is the ConfigHash of the last build that succeeded: they differ after an edit, and
// the next run rebuilds what the edit changed.
type ISO struct {
	ID                 uuid.UUID
	Name               string
	ISOTemplateID      uuid.UUID
	ISOTemplateVersion int
	Kind               ISOKind
	ServerID           uuid.UUID
	Node               string
	// Storage is where the image is downloaded; ArtifactStorage is where what stacks use
	// lives: the image's storage for kind iso, the VM's disk storage for kind cloud-image.
	Storage         string
	ArtifactStorage string
	State           ISOState
	ConfigHash      string
	BuiltHash       *string
	Outputs         ISOOutputs
	Version         int64
	CreatedBy       *uuid.UUID
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// Outdated reports whether the ISO was edited since its last successful build.
func (i ISO) Outdated() bool { return i.BuiltHash != nil && *i.BuiltHash != i.ConfigHash }

// ISOOutputs are what an ISO's builds produced, as the stages record them. Each stage
// replaces its own key; clones are kept by name.
type ISOOutputs struct {
	Image  *ISOImage           `json:"image,omitempty"`
	VM     *ISOVM              `json:"vm,omitempty"`
	Clones map[string]ISOClone `json:"clones,omitempty"`
}

// ISOImage is the downloaded image file, and how its checksum was verified.
type ISOImage struct {
	VolID             string    `json:"volid"`
	Storage           string    `json:"storage"`
	Checksum          string    `json:"checksum"`
	ChecksumAlgorithm string    `json:"checksum_algorithm"`
	Size              int64     `json:"size"`
	CTime             int64     `json:"ctime"`
	VerifiedAt        time.Time `json:"verified_at"`
}

// ISOVM is the VM of a cloud-image build; Template is set once it was converted.
type ISOVM struct {
	VMID     int    `json:"vmid"`
	Node     string `json:"node"`
	Name     string `json:"name"`
	Template bool   `json:"template"`
}

// ISOClone is one clone of the template.
type ISOClone struct {
	Name    string `json:"name"`
	VMID    int    `json:"vmid"`
	Node    string `json:"node"`
	IP      string `json:"ip,omitempty"`
	Started bool   `json:"started"`
}

// ISOArtifact is what a stack's machine uses of a built ISO.
type ISOArtifact struct {
	// Value is what Terraform receives as horizon_iso: the image's volume id for kind iso
	// ("local:iso/debian-12.iso"), the VM id of the template (or VM) for kind cloud-image.
	Value string
	// Storage holds it; Node is where the ISO was built.
	Storage string
	Node    string
}

// Artifact returns what the ISO offers stacks, or false when its builds have not produced it
// (yet): an image for kind iso, a VM for kind cloud-image.
func (i ISO) Artifact() (ISOArtifact, bool) {
	a := ISOArtifact{Storage: i.ArtifactStorage, Node: i.Node}
	switch {
	case i.Kind == ISOKindISO && i.Outputs.Image != nil:
		a.Value = i.Outputs.Image.VolID
	case i.Kind == ISOKindCloudImage && i.Outputs.VM != nil:
		a.Value = strconv.Itoa(i.Outputs.VM.VMID)
	default:
		return a, false
	}
	return a, true
}

// ISOStateChange is one entry of an ISO's state history.
type ISOStateChange struct {
	ID      uuid.UUID
	ISOID   uuid.UUID
	RunID   *uuid.UUID
	From    *ISOState
	To      ISOState
	ActorID *uuid.UUID
	Error   *string
	At      time.Time
}

// Run kinds of ISOs.
const (
	RunISOBuild  RunKind = "iso_build"
	RunISORemove RunKind = "iso_remove"
)

// Step kinds of ISO runs: one per build stage, one per clone, and the removal.
const (
	StepISOPreflight   StepKind = "iso_preflight"
	StepISOImage       StepKind = "iso_image"
	StepISOVMCreate    StepKind = "iso_vm_create"
	StepISOVMConfigure StepKind = "iso_vm_configure"
	StepISOTemplate    StepKind = "iso_template"
	StepISOClone       StepKind = "iso_clone"
	StepISORemove      StepKind = "iso_remove"
)

// ISO reports whether steps of this kind belong to an ISO run (and run as iso:stage tasks).
func (k StepKind) ISO() bool {
	switch k {
	case StepISOPreflight, StepISOImage, StepISOVMCreate, StepISOVMConfigure, StepISOTemplate, StepISOClone, StepISORemove:
		return true
	}
	return false
}

// Actions on an ISO; the names are API.
const (
	ActionRetry  = "retry"
	ActionDelete = "delete"
)

// ISOActions is what can be done to an ISO in a state: only admins write ISOs; a run in
// progress can only be canceled; a removed ISO is history.
func ISOActions(state ISOState, runInProgress bool, can Capabilities) []string {
	if !can.Admin || state == ISORemoved {
		return []string{}
	}
	if runInProgress || state.Busy() {
		return []string{ActionCancel}
	}
	return []string{ActionEdit, ActionRetry, ActionDelete}
}

// Reach says how a machine on node of the Proxmox server server reaches what the ISO built —
// "shared storage <s>" or "storage <s> of node <n>, the machine's own" — or, as an error, why
// it cannot use the ISO: not built (or not any more), built on another cluster, or on a storage
// of another node that is not shared. storages are the ISO's cluster's.
func (i ISO) Reach(server uuid.UUID, storages []ProxmoxStorage, node string) (string, error) {
	a, built := i.Artifact()
	switch {
	case i.State == ISORemoved:
		return "", fmt.Errorf("ISO %s was removed", i.Name)
	case i.State != ISOBuilt:
		return "", fmt.Errorf("ISO %s is %s, not built: it can be used once a build succeeds", i.Name, i.State)
	case !built:
		return "", fmt.Errorf("ISO %s has not built what stacks use yet (its last build did not run every stage)", i.Name)
	case i.ServerID != server:
		return "", fmt.Errorf("ISO %s was built on another Proxmox cluster: a machine uses the ISOs of its own cluster", i.Name)
	}
	for _, s := range storages {
		if s.Name == a.Storage && s.Shared && slices.Contains(s.Nodes, node) {
			return "shared storage " + a.Storage, nil
		}
	}
	if node == a.Node {
		return fmt.Sprintf("storage %s of node %s, the machine's own", a.Storage, a.Node), nil
	}
	if i.Kind == ISOKindISO {
		if s, ok := CopyTarget(storages, node, a.Storage); ok {
			return fmt.Sprintf("a copy on storage %s of node %s (made by the first build there)", s.Name, node), nil
		}
		return "", fmt.Errorf("ISO %s is on storage %s of node %s, and node %s has no directory storage for iso content to copy it to", i.Name, a.Storage, a.Node, node)
	}
	return "", fmt.Errorf("ISO %s is a template VM on storage %s of node %s, which is not shared: Proxmox clones a template to another node only from shared storage, so node %s cannot use it (build the ISO on shared storage, or on node %s)", i.Name, a.Storage, a.Node, node, node)
}

// CopyTarget is the storage of node an installer image is copied to when the node cannot reach
// the one it was built on: a directory storage active on the node that holds iso content,
// the same one by name when the node has it (e.g. "local"), else the first by name.
func CopyTarget(storages []ProxmoxStorage, node, preferred string) (ProxmoxStorage, bool) {
	var found []ProxmoxStorage
	for _, s := range storages {
		if s.Path != "" && slices.Contains(s.Nodes, node) && slices.Contains(s.Content, "iso") {
			found = append(found, s)
		}
	}
	if len(found) == 0 {
		return ProxmoxStorage{}, false
	}
	for _, s := range found {
		if s.Name == preferred {
			return s, true
		}
	}
	slices.SortFunc(found, func(a, b ProxmoxStorage) int { return strings.Compare(a.Name, b.Name) })
	return found[0], true
}

// ISOCopy is an installer image copied to a node that cannot reach the storage it was built on.
type ISOCopy struct {
	ISOID             uuid.UUID
	Node              string
	Storage           string
	VolID             string
	Checksum          string
	ChecksumAlgorithm string
	Size              int64
	CopiedAt          time.Time
}
