package isotemplate

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"

	"horizon/shared/cloudinit"
	"horizon/shared/horizon"
)

// checksumLengths are the hex lengths of PVE's download-url checksum algorithms.
var checksumLengths = map[string]int{"md5": 32, "sha1": 40, "sha224": 56, "sha256": 64, "sha384": 96, "sha512": 128}

var (
	// PVE's file name rules for download-url: iso content, and import content of disk images.
	isoFileRE    = regexp.MustCompile(`(?i)^[^/]+\.(iso|img)$`)
	importFileRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.\-+]*\.(qcow2|raw|vmdk)$`)
	storageIDRE  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9\-_.]*[a-zA-Z0-9]$`)
	dnsLabelRE   = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`)
	userRE       = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	bridgeRE     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.-]{0,14}$`)
	pciRE        = regexp.MustCompile(`^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(\.[0-7])?$`)
	mdevRE       = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	cpuRE        = regexp.MustCompile(`^[A-Za-z0-9_.+-]{1,64}$`)
	packageRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9+.:=~_-]*$`)
)

var osTypes = []string{"other", "wxp", "w2k", "w2k3", "w2k8", "wvista", "win7", "win8", "win10", "win11", "l24", "l26", "solaris"}

// validate records every problem of a spec with its defaults filled.
func (s *Spec) validate(p *horizon.Problems, kind horizon.ISOKind, prefix string) {
	f := func(field string) string { return horizon.JoinPath(prefix, field) }
	s.Source.validate(p, kind, f)
	if s.Storage != "" && !storageIDRE.MatchString(s.Storage) {
		p.Add(f("storage"), "must be a storage id like local")
	}
	switch kind {
	case horizon.ISOKindISO:
		for _, c := range []struct {
			field string
			set   bool
		}{{"vm", s.VM != nil}, {"cloud_init", s.CloudInit != nil}, {"template", s.Template != nil},
			{"clones", len(s.Clones) > 0}, {"full_clones", s.FullClones}} {
			if c.set {
				p.Add(f(c.field), "is only for kind cloud-image")
			}
		}
	case horizon.ISOKindCloudImage:
		if s.VM == nil {
			p.Add(f("vm"), "is required for kind cloud-image")
		} else {
			s.VM.validate(p, f)
		}
		if s.CloudInit == nil {
			p.Add(f("cloud_init"), "is required for kind cloud-image")
		} else {
			s.CloudInit.validate(p, f)
		}
		s.validateClones(p, f)
	default:
		p.Add(f(""), "has unknown kind %q", kind)
	}
}

func (src Source) validate(p *horizon.Problems, kind horizon.ISOKind, f func(string) string) {
	u, err := url.Parse(src.URL)
	if src.URL == "" {
		p.Add(f("source.url"), "is required")
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		p.Add(f("source.url"), "must be an http:// or https:// URL without credentials")
	}
	want, known := checksumLengths[src.ChecksumAlgorithm]
	switch {
	case !known:
		p.Add(f("source.checksum_algorithm"), "must be one of md5, sha1, sha224, sha256, sha384, sha512")
	case src.Checksum == "":
		p.Add(f("source.checksum"), "is required: the image is verified and cached by it")
	default:
		if _, err := hex.DecodeString(src.Checksum); err != nil || len(src.Checksum) != want {
			p.Add(f("source.checksum"), "must be %d hex digits (a %s digest)", want, src.ChecksumAlgorithm)
		}
	}
	switch {
	case src.FileName == "" && src.URL != "":
		p.Add(f("source.file_name"), "is required: the URL does not end with a file name")
	case src.FileName == "":
	case len(src.FileName) > 255:
		p.Add(f("source.file_name"), "must be at most 255 characters")
	case kind == horizon.ISOKindISO && !isoFileRE.MatchString(src.FileName):
		p.Add(f("source.file_name"), "must end in .iso or .img (got %q); set file_name", src.FileName)
	case kind == horizon.ISOKindCloudImage && !importFileRE.MatchString(src.FileName):
		p.Add(f("source.file_name"), "must be a disk image name ending in .qcow2, .raw or .vmdk (got %q); set file_name", src.FileName)
	}
}

func (v *VM) validate(p *horizon.Problems, f func(string) string) {
	checkVMID(p, f("vm.vmid"), v.VMID)
	checkDNSName(p, f("vm.name"), v.Name)
	if v.Cores < 1 || v.Cores > 1024 {
		p.Add(f("vm.cores"), "must be from 1 to 1024")
	}
	if v.Sockets < 1 || v.Sockets > 4 {
		p.Add(f("vm.sockets"), "must be from 1 to 4")
	}
	if v.MemoryMB < 16 {
		p.Add(f("vm.memory_mb"), "must be at least 16")
	}
	if v.CPU != "" && !cpuRE.MatchString(v.CPU) {
		p.Add(f("vm.cpu"), "must be a PVE CPU type like host or x86-64-v2-AES")
	}
	if v.BIOS != "seabios" && v.BIOS != "ovmf" {
		p.Add(f("vm.bios"), "must be seabios or ovmf")
	}
	if v.PreEnrolledKeys && v.BIOS != "ovmf" {
		p.Add(f("vm.pre_enrolled_keys"), "needs bios ovmf (the keys live in its EFI disk)")
	}
	if v.Machine != "" && v.Machine != "q35" && v.Machine != "pc" {
		p.Add(f("vm.machine"), "must be q35 or pc")
	}
	if !slices.Contains([]string{"scsi", "virtio", "sata"}, v.Disk.Bus) {
		p.Add(f("vm.disk.bus"), "must be scsi, virtio or sata")
	}
	if v.Disk.Storage == "" {
		p.Add(f("vm.disk.storage"), "is required: the storage the image is imported to")
	} else if !storageIDRE.MatchString(v.Disk.Storage) {
		p.Add(f("vm.disk.storage"), "must be a storage id like local-lvm")
	}
	if v.Disk.SizeGB < 0 || v.Disk.SizeGB > 65536 {
		p.Add(f("vm.disk.size_gb"), "must be from 0 (keep the image's size) to 65536")
	}
	if len(v.GPU) > 16 {
		p.Add(f("vm.gpu"), "may list at most 16 devices (hostpci0 to hostpci15)")
	}
	seen := map[string]bool{}
	for i, g := range v.GPU {
		at := f(fmt.Sprintf("vm.gpu[%d]", i))
		if !pciRE.MatchString(g.Device) {
			p.Add(at+".device", "must be a PCI address like 0000:01:00.0, 01:00.0 or 01:00")
		} else if seen[strings.ToLower(g.Device)] {
			p.Add(at+".device", "is listed twice")
		}
		seen[strings.ToLower(g.Device)] = true
		if g.PCIe && v.Machine == "pc" {
			p.Add(at+".pcie", "needs machine q35")
		}
		if g.MDev != "" && !mdevRE.MatchString(g.MDev) {
			p.Add(at+".mdev", "must be a mediated device type like nvidia-63")
		}
	}
	if !bridgeRE.MatchString(v.Network.Bridge) {
		p.Add(f("vm.network.bridge"), "must be a bridge name like vmbr0")
	}
	if v.Network.VLAN != nil && (*v.Network.VLAN < 1 || *v.Network.VLAN > 4094) {
		p.Add(f("vm.network.vlan"), "must be from 1 to 4094")
	}
	if !slices.Contains([]string{"virtio", "e1000", "e1000e", "rtl8139", "vmxnet3"}, v.Network.Model) {
		p.Add(f("vm.network.model"), "must be virtio, e1000, e1000e, rtl8139 or vmxnet3")
	}
	if !slices.Contains(osTypes, v.OSType) {
		p.Add(f("vm.ostype"), "must be one of %s", strings.Join(osTypes, ", "))
	}
}

func (ci *CloudInit) validate(p *horizon.Problems, f func(string) string) {
	if !userRE.MatchString(ci.User) || ci.User == "root" {
		p.Add(f("cloud_init.user"), "must be a login name like debian (not root)")
	}
	if len(ci.SSHAuthorizedKeys) == 0 {
		p.Add(f("cloud_init.ssh_authorized_keys"), "needs at least one public key: nobody could log in to the VM or its clones")
	}
	for i, k := range ci.SSHAuthorizedKeys {
		if strings.ContainsAny(strings.TrimSpace(k), "\r\n") {
			p.Add(f(fmt.Sprintf("cloud_init.ssh_authorized_keys[%d]", i)), "must be one authorized_keys line")
		} else if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k)); err != nil {
			p.Add(f(fmt.Sprintf("cloud_init.ssh_authorized_keys[%d]", i)), "is not an SSH public key (authorized_keys line)")
		}
	}
	if v := ci.Vendor; v != nil {
		for i, pkg := range v.Packages {
			if !packageRE.MatchString(pkg) {
				p.Add(f(fmt.Sprintf("cloud_init.vendor.packages[%d]", i)), "must be a package name")
			}
		}
		for i, cmd := range v.RunCmd {
			if len(cmd) == 0 {
				p.Add(f(fmt.Sprintf("cloud_init.vendor.runcmd[%d]", i)), "must be a non-empty argv")
			}
		}
		if v.Extra != "" {
			// The renderer the build uses is the judge: a spec it would refuse (a key set
			// twice, a key the vendor-data already sets) is refused here, not mid-build.
			if _, err := cloudinit.RenderVendorData(cloudinit.Vendor{Packages: v.Packages, RunCmd: v.RunCmd, Extra: v.Extra}); err != nil {
				p.Add(f("cloud_init.vendor.extra"), "must be a YAML mapping of cloud-config keys: %s", err)
			}
		}
	}
	n := ci.Network
	switch n.Mode {
	case "dhcp":
		if n.Address != "" || n.Gateway != "" {
			p.Add(f("cloud_init.network.mode"), "is dhcp: address and gateway are only for static")
		}
	case "static":
		if _, err := netip.ParsePrefix(n.Address); err != nil {
			p.Add(f("cloud_init.network.address"), "must be an IPv4 address with its prefix, like 10.0.0.5/24")
		}
		if _, err := netip.ParseAddr(n.Gateway); err != nil {
			p.Add(f("cloud_init.network.gateway"), "must be an IP address")
		}
	default:
		p.Add(f("cloud_init.network.mode"), "must be dhcp or static")
	}
	for i, d := range n.DNS {
		if _, err := netip.ParseAddr(d); err != nil {
			p.Add(f(fmt.Sprintf("cloud_init.network.dns[%d]", i)), "must be an IP address")
		}
	}
	if n.SearchDomain != "" {
		checkDNSName(p, f("cloud_init.network.search_domain"), n.SearchDomain)
	}
	if ci.SnippetStorage != "" && !storageIDRE.MatchString(ci.SnippetStorage) {
		p.Add(f("cloud_init.snippet_storage"), "must be a storage id like local")
	}
}

func (s *Spec) validateClones(p *horizon.Problems, f func(string) string) {
	names, ids, ips := map[string]bool{}, map[int]string{}, map[netip.Addr]string{}
	if s.VM != nil {
		ids[s.VM.VMID] = "vm.vmid"
		names[strings.ToLower(s.VM.Name)] = true
	}
	static := s.CloudInit != nil && s.CloudInit.Network.Mode == "static"
	if static {
		if pfx, err := netip.ParsePrefix(s.CloudInit.Network.Address); err == nil {
			ips[pfx.Addr()] = "cloud_init.network.address"
		}
	}
	if len(s.Clones) > 100 {
		p.Add(f("clones"), "may list at most 100 clones")
	}
	for i, c := range s.Clones {
		at := func(field string) string { return f(fmt.Sprintf("clones[%d].%s", i, field)) }
		checkDNSName(p, at("name"), c.Name)
		if names[strings.ToLower(c.Name)] {
			p.Add(at("name"), "is also the name of the VM or another clone")
		}
		names[strings.ToLower(c.Name)] = true
		checkVMID(p, at("vmid"), c.VMID)
		if other, dup := ids[c.VMID]; dup && c.VMID != 0 {
			p.Add(at("vmid"), "is also %s", other)
		}
		ids[c.VMID] = fmt.Sprintf("clones[%d].vmid", i)
		switch {
		case c.IP == "" && static:
			p.Add(at("ip"), "is required: the template's address is static, and every clone needs its own")
		case c.IP == "":
			if c.Gateway != "" {
				p.Add(at("gateway"), "is only for a clone with an ip")
			}
		default:
			pfx, err := netip.ParsePrefix(c.IP)
			if err != nil || !pfx.Addr().Is4() {
				p.Add(at("ip"), "must be an IPv4 address with its prefix, like 10.0.0.21/24")
				break
			}
			if other, dup := ips[pfx.Addr()]; dup {
				p.Add(at("ip"), "is also %s", other)
			}
			ips[pfx.Addr()] = fmt.Sprintf("clones[%d].ip", i)
			if c.Gateway == "" && !static {
				p.Add(at("gateway"), "is required: the template's network is DHCP, so there is no gateway to default to")
			} else if c.Gateway != "" {
				if _, err := netip.ParseAddr(c.Gateway); err != nil {
					p.Add(at("gateway"), "must be an IP address")
				}
			}
		}
	}
}

func checkVMID(p *horizon.Problems, field string, id int) {
	if id < 100 || id > 999999999 {
		p.Add(field, "must be a VM id from 100 to 999999999")
	}
}

func checkDNSName(p *horizon.Problems, field, name string) {
	if name == "" {
		p.Add(field, "is required")
		return
	}
	if len(name) > 253 {
		p.Add(field, "must be at most 253 characters")
		return
	}
	for label := range strings.SplitSeq(name, ".") {
		if !dnsLabelRE.MatchString(label) {
			p.Add(field, "must be a DNS name (letters, digits and hyphens)")
			return
		}
	}
}
