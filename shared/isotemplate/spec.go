package isotemplate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"

	"horizon/shared/horizon"
)

// MaxSize bounds a spec document, in bytes.
const MaxSize = 64 << 10

// Spec is one ISO template version. Optional fields are pointers or zero values that Parse
// fills with their defaults (see each field).
type Spec struct {
	// Source is the image to download.
	Source Source `json:"source"`
	// Storage is the default storage the image is downloaded to (content "iso" for kind iso,
	// "import" for kind cloud-image); a build may name another.
	Storage string `json:"storage,omitempty"`
	// VM, CloudInit, Template, Clones and FullClones are for kind cloud-image only.
	VM        *VM        `json:"vm,omitempty"`
	CloudInit *CloudInit `json:"cloud_init,omitempty"`
	// Template converts the VM to a Proxmox template (default true).
	Template *bool `json:"template,omitempty"`
	// Clones are made from the template (or the VM), each independently.
	Clones []Clone `json:"clones,omitempty"`
	// FullClones copies the disks instead of linking them to the template's (PVE's default for
	// a template is a linked clone).
	FullClones bool `json:"full_clones,omitempty"`
}

// Source is where an image comes from and how to check it.
type Source struct {
	URL string `json:"url"`
	// Checksum and ChecksumAlgorithm (md5, sha1, sha224, sha256, sha384, sha512; default
	// sha256) are verified by Proxmox during the download.
	Checksum          string `json:"checksum"`
	ChecksumAlgorithm string `json:"checksum_algorithm,omitempty"`
	// FileName is the name on the storage (default: from the URL, see the package doc).
	FileName string `json:"file_name,omitempty"`
	// VerifyCertificates checks the download server's TLS certificate (default true).
	VerifyCertificates *bool `json:"verify_certificates,omitempty"`
}

// VM is the VM a cloud-image build makes.
type VM struct {
	// VMID is the VM's id in the cluster (required).
	VMID int `json:"vmid"`
	// Name is the VM's name, a DNS name (required).
	Name string `json:"name"`
	// Cores (default 2), Sockets (default 1) and MemoryMB (default 2048).
	Cores    int `json:"cores,omitempty"`
	Sockets  int `json:"sockets,omitempty"`
	MemoryMB int `json:"memory_mb,omitempty"`
	// CPU is the CPU type (default: PVE's).
	CPU string `json:"cpu,omitempty"`
	// BIOS is seabios (default) or ovmf; ovmf gets an EFI disk on the disk's storage.
	BIOS string `json:"bios,omitempty"`
	// PreEnrolledKeys enrols the distribution's Secure Boot keys in the EFI disk (ovmf only).
	PreEnrolledKeys bool `json:"pre_enrolled_keys,omitempty"`
	// Machine is q35 or pc (i440fx). Default: q35 when the BIOS is ovmf or a GPU is passed
	// through as PCIe, else PVE's default.
	Machine string `json:"machine,omitempty"`
	// TPM adds a TPM 2.0 state disk on the disk's storage.
	TPM bool `json:"tpm,omitempty"`
	// Disk is the system disk, imported from the image.
	Disk Disk `json:"disk"`
	// GPU lists PCI devices to pass through, as hostpci0, hostpci1, …
	GPU []PCI `json:"gpu,omitempty"`
	// Network is the VM's first NIC.
	Network Network `json:"network"`
	// Agent enables the QEMU guest agent option.
	Agent bool `json:"agent,omitempty"`
	// OSType is PVE's ostype (default l26).
	OSType string `json:"ostype,omitempty"`
}

// Disk is where the image is imported to.
type Disk struct {
	// Bus is scsi (default), virtio or sata; the disk is <bus>0.
	Bus string `json:"bus,omitempty"`
	// Storage holds VM images (content "images"); also the EFI and TPM disks'.
	Storage string `json:"storage"`
	// SizeGB grows the disk to this size after the import; 0 keeps the image's size.
	SizeGB int  `json:"size_gb,omitempty"`
	SSD    bool `json:"ssd,omitempty"`
	// Discard passes TRIM through to the storage.
	Discard bool `json:"discard,omitempty"`
}

// PCI is one passed-through device (hostpciN).
type PCI struct {
	// Device is a PCI address: 0000:01:00.0, 01:00.0, or 01:00 for every function.
	Device string `json:"device"`
	// PCIe attaches it as PCI Express (q35 only).
	PCIe bool `json:"pcie,omitempty"`
	// PrimaryGPU makes it the VM's primary display (x-vga).
	PrimaryGPU bool `json:"primary_gpu,omitempty"`
	// ROMBar maps the device's ROM (default: PVE's, on).
	ROMBar *bool `json:"rombar,omitempty"`
	// MDev is a mediated device type (vGPU), e.g. nvidia-63.
	MDev string `json:"mdev,omitempty"`
}

// Network is a NIC.
type Network struct {
	// Bridge (default vmbr0), VLAN tag (1–4094, none by default), model (default virtio).
	Bridge   string `json:"bridge,omitempty"`
	VLAN     *int   `json:"vlan,omitempty"`
	Model    string `json:"model,omitempty"`
	Firewall bool   `json:"firewall,omitempty"`
}

// CloudInit is the cloud-init the VM (and so its clones) gets: a user snippet and, when asked
// for, a vendor snippet, uploaded to the node's snippet storage, and ipconfig0.
type CloudInit struct {
	// User is the login user (default "horizon"); SSHAuthorizedKeys may log in as it (one at
	// least).
	User              string   `json:"user,omitempty"`
	SSHAuthorizedKeys []string `json:"ssh_authorized_keys"`
	// Vendor is vendor-data: packages, commands, and further cloud-config keys.
	Vendor *Vendor `json:"vendor,omitempty"`
	// Network is DHCP (default) or a static address for the VM.
	Network IPConfig `json:"network"`
	// SnippetStorage is the storage the snippets go to (default: a node-local storage with
	// content "snippets", else a shared one).
	SnippetStorage string `json:"snippet_storage,omitempty"`
}

// Vendor is vendor-data (see shared/cloudinit.Vendor).
type Vendor struct {
	Packages []string   `json:"packages,omitempty"`
	RunCmd   [][]string `json:"runcmd,omitempty"`
	// Extra is a YAML mapping of further cloud-config keys.
	Extra string `json:"extra,omitempty"`
}

// IPConfig is ipconfig0 and the name servers.
type IPConfig struct {
	// Mode is dhcp (default) or static.
	Mode string `json:"mode,omitempty"`
	// Address (CIDR, e.g. 10.0.0.5/24) and Gateway are required for static.
	Address string `json:"address,omitempty"`
	Gateway string `json:"gateway,omitempty"`
	// DNS servers and search domain, written as nameserver and searchdomain.
	DNS          []string `json:"dns,omitempty"`
	SearchDomain string   `json:"search_domain,omitempty"`
}

// Clone is one VM cloned from the template.
type Clone struct {
	Name string `json:"name"`
	VMID int    `json:"vmid"`
	// IP is a static address in CIDR form; without it the clone keeps the template's network
	// (DHCP). Gateway defaults to the spec's static gateway.
	IP      string `json:"ip,omitempty"`
	Gateway string `json:"gateway,omitempty"`
	// Start powers the clone on once configured (default true).
	Start *bool `json:"start,omitempty"`
}

// StartClone reports whether the clone is started once made.
func (c Clone) StartClone() bool { return c.Start == nil || *c.Start }

// MakesTemplate reports whether a cloud-image build converts its VM to a template.
func (s *Spec) MakesTemplate() bool { return s.VM != nil && (s.Template == nil || *s.Template) }

// Parse reads a spec of kind strictly (unknown fields and wrong types are problems), fills its
// defaults and validates it, reporting every problem at once in a *horizon.ValidationError
// whose fields are paths under prefix (e.g. "spec.vm.cores").
func Parse(kind horizon.ISOKind, raw []byte, prefix string) (*Spec, error) {
	if len(raw) > MaxSize {
		return nil, horizon.Invalid(prefix, "is larger than %d bytes", MaxSize)
	}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, horizon.Invalid(prefix, "is required")
	}
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, decodeProblem(prefix, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, horizon.Invalid(prefix, "holds more than one JSON value")
	}
	s.fillDefaults(kind)
	var p horizon.Problems
	s.validate(&p, kind, prefix)
	if err := p.Err(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Decode reads a stored spec back. It was valid when stored and is not validated again.
func Decode(raw []byte) (*Spec, error) {
	var s Spec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("decode ISO template spec: %w", err)
	}
	return &s, nil
}

func decodeProblem(prefix string, err error) error {
	var typ *json.UnmarshalTypeError
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &typ):
		return horizon.Invalid(horizon.JoinPath(prefix, typ.Field), "must be a JSON %s, not %s", typ.Type.Kind(), typ.Value)
	case errors.As(err, &syntax):
		return horizon.Invalid(prefix, "is not valid JSON (at byte %d)", syntax.Offset)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return horizon.Invalid(prefix, "has an unknown field %s", name)
	}
	return horizon.Invalid(prefix, "cannot be read: %s", err.Error())
}

// Canonical is the spec's canonical JSON: what is stored, and what Hash hashes.
func (s *Spec) Canonical() []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic("isotemplate: marshal spec: " + err.Error()) // strings, numbers and bools only
	}
	return b
}

// Hash returns "sha256:<hex>" of the canonical JSON.
func (s *Spec) Hash() string {
	sum := sha256.Sum256(s.Canonical())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ConfigHash identifies one build's configuration: the spec's hash and where it is built.
func ConfigHash(specHash, node, storage string) string {
	sum := sha256.Sum256([]byte(specHash + "\x00" + node + "\x00" + storage))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (s *Spec) fillDefaults(kind horizon.ISOKind) {
	if s.Source.ChecksumAlgorithm == "" {
		s.Source.ChecksumAlgorithm = "sha256"
	}
	s.Source.Checksum = strings.ToLower(strings.TrimSpace(s.Source.Checksum))
	if s.Source.FileName == "" {
		s.Source.FileName = defaultFileName(kind, s.Source.URL)
	}
	if s.Source.VerifyCertificates == nil {
		t := true
		s.Source.VerifyCertificates = &t
	}
	if kind != horizon.ISOKindCloudImage {
		return
	}
	if s.Template == nil {
		t := true
		s.Template = &t
	}
	if v := s.VM; v != nil {
		if v.Cores == 0 {
			v.Cores = 2
		}
		if v.Sockets == 0 {
			v.Sockets = 1
		}
		if v.MemoryMB == 0 {
			v.MemoryMB = 2048
		}
		if v.BIOS == "" {
			v.BIOS = "seabios"
		}
		if v.Machine == "" && (v.BIOS == "ovmf" || anyPCIe(v.GPU)) {
			v.Machine = "q35"
		}
		if v.Disk.Bus == "" {
			v.Disk.Bus = "scsi"
		}
		if v.Network.Bridge == "" {
			v.Network.Bridge = "vmbr0"
		}
		if v.Network.Model == "" {
			v.Network.Model = "virtio"
		}
		if v.OSType == "" {
			v.OSType = "l26"
		}
	}
	if ci := s.CloudInit; ci != nil {
		if ci.User == "" {
			ci.User = "horizon"
		}
		if ci.Network.Mode == "" {
			ci.Network.Mode = "dhcp"
		}
	}
}

func anyPCIe(gpus []PCI) bool {
	for _, g := range gpus {
		if g.PCIe {
			return true
		}
	}
	return false
}

// defaultFileName is the image's file name on the storage when the spec does not give one.
func defaultFileName(kind horizon.ISOKind, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	name := path.Base(u.Path)
	if name == "/" || name == "." {
		return ""
	}
	if kind == horizon.ISOKindCloudImage && strings.HasSuffix(strings.ToLower(name), ".img") {
		name = name[:len(name)-len(".img")] + ".qcow2"
	}
	return name
}
