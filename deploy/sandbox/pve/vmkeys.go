package pve

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// keyKind says how a VM config value is checked and how GET …/config renders it: integers,
// numbers and booleans as JSON numbers (go-proxmox decodes cores, onboot, template… as
// numbers), everything else as a string.
type keyKind int

const (
	kindString keyKind = iota
	kindInt
	kindNumber
	kindBool
	kindDrive // disk or CD-ROM: may allocate, import or attach a volume
)

// vmKey describes one VM config key the sandbox understands, named as PVE's schema names it.
type vmKey struct {
	kind    keyKind
	min     int
	enum    []string
	pattern *regexp.Regexp
	maxLen  int
	// check validates a string value and returns the form PVE stores.
	check func(v string) (string, error)
}

// vmKeys are the VM config keys the sandbox accepts in create and config calls. PVE has more;
// a key not listed here is refused with PVE's "property is not defined in schema" 400, so a
// client never silently depends on a key the sandbox ignores. The fidelity test checks that
// PVE's schema has each of them.
var vmKeys = map[string]vmKey{
	"acpi":         {kind: kindBool},
	"agent":        {check: checkAgent},
	"args":         {},
	"autostart":    {kind: kindBool},
	"balloon":      {kind: kindInt, min: 0},
	"bios":         {enum: []string{"seabios", "ovmf"}},
	"boot":         {check: checkBoot},
	"cicustom":     {check: checkCICustom},
	"cipassword":   {},
	"citype":       {enum: []string{"configdrive2", "nocloud", "opennebula"}},
	"ciupgrade":    {kind: kindBool},
	"ciuser":       {},
	"cores":        {kind: kindInt, min: 1},
	"cpu":          {},
	"cpulimit":     {kind: kindNumber},
	"cpuunits":     {kind: kindInt, min: 1},
	"description":  {maxLen: 8192},
	"efidisk0":     {kind: kindDrive},
	"hostpci[n]":   {check: nonEmpty},
	"hotplug":      {},
	"ide[n]":       {kind: kindDrive},
	"ipconfig[n]":  {check: checkIPConfig},
	"keyboard":     {},
	"kvm":          {kind: kindBool},
	"localtime":    {kind: kindBool},
	"machine":      {},
	"memory":       {check: checkMemory},
	"name":         {pattern: regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?\.)*[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?$`)},
	"nameserver":   {check: checkAddressList},
	"net[n]":       {check: checkNet},
	"numa":         {kind: kindBool},
	"onboot":       {kind: kindBool},
	"ostype":       {enum: []string{"other", "wxp", "w2k", "w2k3", "w2k8", "wvista", "win7", "win8", "win10", "win11", "l24", "l26", "solaris"}},
	"protection":   {kind: kindBool},
	"rng0":         {},
	"sata[n]":      {kind: kindDrive},
	"scsi[n]":      {kind: kindDrive},
	"scsihw":       {enum: []string{"lsi", "lsi53c810", "virtio-scsi-pci", "virtio-scsi-single", "megasas", "pvscsi"}},
	"searchdomain": {},
	"serial[n]":    {pattern: regexp.MustCompile(`^(/dev/.+|socket)$`)},
	"shares":       {kind: kindInt, min: 0},
	"smbios1":      {maxLen: 512},
	"sockets":      {kind: kindInt, min: 1},
	"sshkeys":      {check: checkURLEncoded},
	"startup":      {pattern: regexp.MustCompile(`^((order=)?\d+)?(,?(up|down)=\d+)*$`)},
	"tablet":       {kind: kindBool},
	"tags":         {check: normalizeTags},
	"template":     {kind: kindBool},
	"tpmstate0":    {kind: kindDrive},
	"unused[n]":    {},
	"usb[n]":       {check: nonEmpty},
	"vcpus":        {kind: kindInt, min: 1},
	"vga":          {},
	"virtio[n]":    {kind: kindDrive},
	"vmgenid":      {pattern: regexp.MustCompile(`^(?:[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}|[01])$`)},
	"watchdog":     {},
}

// indexedMax is the highest index of each indexed key PVE accepts (scsi0..scsi30 …).
var indexedMax = map[string]int{
	"hostpci": 15, "ide": 3, "ipconfig": 31, "net": 31, "sata": 5, "scsi": 30,
	"serial": 3, "unused": 255, "usb": 4, "virtio": 15,
}

// lookupKey returns the spec of a config key ("scsi3" finds "scsi[n]") and its schema name.
func lookupKey(name string) (vmKey, string, bool) {
	if k, ok := vmKeys[name]; ok && !strings.Contains(name, "[") {
		return k, name, true
	}
	prefix, idx, ok := splitIndexed(name)
	if !ok || idx > indexedMax[prefix] {
		return vmKey{}, "", false
	}
	k, ok := vmKeys[prefix+"[n]"]
	return k, prefix + "[n]", ok
}

// vmKeyNames are the schema names of vmKeys, sorted, for route parameter lists.
func vmKeyNames() []string { return sortedKeys(vmKeys) }

// checkValue validates a non-drive value and returns what PVE stores.
func (k vmKey) checkValue(v string) (string, error) {
	switch k.kind {
	case kindInt:
		n, err := strconv.Atoi(v)
		if err != nil {
			return "", fmt.Errorf("type check ('integer') failed - got '%s'", v)
		}
		if n < k.min {
			return "", fmt.Errorf("value must have a minimum value of %d", k.min)
		}
		return strconv.Itoa(n), nil
	case kindNumber:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return "", fmt.Errorf("type check ('number') failed - got '%s'", v)
		}
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	case kindBool:
		b, ok := parseBool(v)
		if !ok {
			return "", fmt.Errorf("type check ('boolean') failed - got '%s'", v)
		}
		return boolString(b), nil
	}
	if k.enum != nil && !slices.Contains(k.enum, v) {
		return "", fmt.Errorf("%s", enumMessage(v, k.enum))
	}
	if k.pattern != nil && !k.pattern.MatchString(v) {
		return "", fmt.Errorf("value does not match the regex pattern")
	}
	if k.maxLen > 0 && len(v) > k.maxLen {
		return "", fmt.Errorf("value may only be %d characters long", k.maxLen)
	}
	if k.check != nil {
		return k.check(v)
	}
	return v, nil
}

func nonEmpty(v string) (string, error) {
	if strings.TrimSpace(v) == "" {
		return "", fmt.Errorf("invalid format - value is empty")
	}
	return v, nil
}

func checkAgent(v string) (string, error) {
	opts, err := parsePropertyString(v, "enabled")
	if err != nil {
		return "", err
	}
	if e, ok := opts["enabled"]; ok {
		if _, ok := parseBool(e); !ok {
			return "", fmt.Errorf("invalid format - enabled: type check ('boolean') failed - got '%s'", e)
		}
	}
	return v, nil
}

func checkBoot(v string) (string, error) {
	if regexp.MustCompile(`^[acdn]{1,4}$`).MatchString(v) {
		return v, nil // the legacy form
	}
	opts, err := parsePropertyString(v, "legacy")
	if err != nil {
		return "", err
	}
	if order, ok := opts["order"]; ok {
		for _, dev := range strings.Split(order, ";") {
			if !regexp.MustCompile(`^(ide|sata|scsi|virtio|net|efidisk|tpmstate)\d+$`).MatchString(dev) {
				return "", fmt.Errorf("invalid format - invalid boot device '%s'", dev)
			}
		}
	}
	return v, nil
}

func checkCICustom(v string) (string, error) {
	opts, err := parsePropertyString(v, "")
	if err != nil {
		return "", err
	}
	for k, vol := range opts {
		if !slices.Contains([]string{"meta", "network", "user", "vendor"}, k) {
			return "", fmt.Errorf("invalid format - unknown key '%s'", k)
		}
		if !strings.Contains(vol, ":") {
			return "", fmt.Errorf("invalid format - %s: invalid volume ID '%s'", k, vol)
		}
	}
	return v, nil
}

// checkIPConfig accepts PVE's ip=…,gw=…,ip6=…,gw6=… but, for IPv4, only dhcp or a static
// address in 127.0.0.0/8: the sandbox gives a started VM an SSH server on that loopback
// address, and any other address would point clients at a real network.
func checkIPConfig(v string) (string, error) {
	opts, err := parsePropertyString(v, "")
	if err != nil {
		return "", err
	}
	for k, val := range opts {
		switch k {
		case "ip":
			if val == "dhcp" {
				continue
			}
			pfx, err := netip.ParsePrefix(val)
			if err != nil || !pfx.Addr().Is4() {
				return "", fmt.Errorf("invalid format - ip: invalid IPv4 address/prefix '%s'", val)
			}
			if !netip.MustParsePrefix("127.0.0.0/8").Contains(pfx.Addr()) {
				return "", fmt.Errorf("sandbox: only ip=dhcp or a static address in 127.0.0.0/8 is supported (got '%s'); a started VM's SSH server listens on that loopback address", val)
			}
		case "gw":
			if _, err := netip.ParseAddr(val); err != nil {
				return "", fmt.Errorf("invalid format - gw: invalid IPv4 address '%s'", val)
			}
		case "ip6", "gw6":
			// Kept as given: the sandbox serves SSH on the IPv4 address only.
		default:
			return "", fmt.Errorf("invalid format - unknown key '%s'", k)
		}
	}
	return v, nil
}

func checkAddressList(v string) (string, error) {
	for _, a := range splitList(v) {
		if _, err := netip.ParseAddr(a); err != nil {
			return "", fmt.Errorf("invalid format - value '%s' does not look like a valid address", a)
		}
	}
	return v, nil
}

func checkMemory(v string) (string, error) {
	s := strings.TrimPrefix(v, "current=")
	n, err := strconv.Atoi(s)
	if err != nil || n < 16 {
		return "", fmt.Errorf("invalid format - current: value must have a minimum value of 16")
	}
	return strconv.Itoa(n), nil
}

// checkURLEncoded is PVE's "urlencoded" format: every reserved character percent-encoded,
// '+' not allowed for a space (go-proxmox's EncodeSSHKeys exists because of it).
func checkURLEncoded(v string) (string, error) {
	if !regexp.MustCompile(`^[-%a-zA-Z0-9_.!~*'()]*$`).MatchString(v) {
		return "", fmt.Errorf("invalid format - invalid urlencoded string: %s", v)
	}
	return v, nil
}

var netModels = []string{"e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551", "i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio", "vmxnet3"}

// checkNet validates a NIC ("virtio,bridge=vmbr0" or "virtio=BC:24:…,bridge=vmbr0").
// The MAC address is generated when the VM config is written (see fillNetMAC).
func checkNet(v string) (string, error) {
	opts, order, err := parseOrdered(v)
	if err != nil {
		return "", err
	}
	model := ""
	for _, k := range order {
		if slices.Contains(netModels, k) {
			model = k
		}
	}
	if m, ok := opts["model"]; ok {
		model = m
	}
	if model == "" {
		return "", fmt.Errorf("invalid format - missing NIC model")
	}
	if mac := opts[model]; mac != "" {
		if !regexp.MustCompile(`^(?i)[0-9a-f]{2}(:[0-9a-f]{2}){5}$`).MatchString(mac) {
			return "", fmt.Errorf("invalid format - invalid MAC address '%s'", mac)
		}
	}
	return v, nil
}

// parsePropertyString parses PVE's "k=v,k=v" strings; a first bare value is stored under
// defaultKey (rejected when defaultKey is "").
func parsePropertyString(v, defaultKey string) (map[string]string, error) {
	out := map[string]string{}
	for i, part := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			if i == 0 && defaultKey != "" {
				out[defaultKey] = part
				continue
			}
			return nil, fmt.Errorf("invalid format - missing key in comma-separated list property")
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("invalid format - duplicate key in comma-separated list property: %s", k)
		}
		out[k] = val
	}
	return out, nil
}

// parseOrdered parses "a,b=c" keeping key order; a bare element has an empty value.
func parseOrdered(v string) (map[string]string, []string, error) {
	out := map[string]string{}
	var order []string
	for _, part := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(part, "=")
		if k == "" {
			return nil, nil, fmt.Errorf("invalid format - empty element in comma-separated list")
		}
		if _, dup := out[k]; dup {
			return nil, nil, fmt.Errorf("invalid format - duplicate key in comma-separated list property: %s", k)
		}
		out[k] = val
		order = append(order, k)
	}
	return out, order, nil
}
