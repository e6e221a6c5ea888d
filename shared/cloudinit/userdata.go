package cloudinit

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"
)

// DefaultUser is the login user created when Machine.User is empty.
const DefaultUser = "horizon"

// NodeExporterPackage and NodeExporterService are the Debian/Ubuntu package and systemd unit
// installed and enabled when Machine.NodeExporter is set.
const (
	NodeExporterPackage = "prometheus-node-exporter"
	NodeExporterService = "prometheus-node-exporter"
)

// header is the first line cloud-init requires of a cloud-config document.
const header = "#cloud-config\n"

// Machine is what the user-data of one VM is rendered from.
type Machine struct {
	// Hostname is the short host name: one DNS label (letters, digits, hyphens, at most 63).
	Hostname string
	// FQDN is the fully qualified name; optional. When set it must start with Hostname.
	FQDN string
	// User is the login user to create; DefaultUser when empty.
	User string
	// AuthorizedKeys are the public keys (authorized_keys lines) allowed to log in as User:
	// the key the user chose and Horizon's deploy key. At least one is required.
	AuthorizedKeys []string
	// HostKey is the SSH host key the VM must present; required (see the package doc).
	HostKey HostKey
	// NodeExporter installs and enables Prometheus Node Exporter.
	NodeExporter bool
}

// userData is the document, in the order its keys are written.
type userData struct {
	Hostname       string     `yaml:"hostname"`
	FQDN           string     `yaml:"fqdn,omitempty"`
	ManageEtcHosts bool       `yaml:"manage_etc_hosts"`
	Users          []user     `yaml:"users"`
	DisableRoot    bool       `yaml:"disable_root"`
	SSHPwAuth      bool       `yaml:"ssh_pwauth"`
	SSHDeleteKeys  bool       `yaml:"ssh_deletekeys"`
	SSHKeys        sshKeys    `yaml:"ssh_keys"`
	PackageUpdate  bool       `yaml:"package_update,omitempty"`
	Packages       []string   `yaml:"packages,omitempty"`
	RunCmd         [][]string `yaml:"runcmd,omitempty"`
}

type user struct {
	Name              string   `yaml:"name"`
	Shell             string   `yaml:"shell"`
	Sudo              string   `yaml:"sudo"`
	LockPasswd        bool     `yaml:"lock_passwd"`
	SSHAuthorizedKeys []string `yaml:"ssh_authorized_keys"`
}

type sshKeys struct {
	ED25519Private string `yaml:"ed25519_private"`
	ED25519Public  string `yaml:"ed25519_public"`
}

var (
	labelRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)
	userRE  = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
)

// RenderUserData returns the #cloud-config user-data of m. It returns an error naming the first
// invalid field: a host name that is not a DNS label, an FQDN that is not a DNS name starting
// with it, a user name useradd refuses, no authorized key or one that does not parse as a
// single authorized_keys line, or a missing host key.
//
// The result contains the private host key: the caller must not log it.
func RenderUserData(m Machine) ([]byte, error) {
	if !labelRE.MatchString(m.Hostname) {
		return nil, fmt.Errorf("hostname %q is not a DNS label", m.Hostname)
	}
	if m.FQDN != "" {
		if !strings.HasPrefix(m.FQDN, m.Hostname+".") || !validDNSName(m.FQDN) {
			return nil, fmt.Errorf("fqdn %q is not a DNS name starting with %q", m.FQDN, m.Hostname+".")
		}
	}
	if m.User == "" {
		m.User = DefaultUser
	}
	if !userRE.MatchString(m.User) || m.User == "root" {
		return nil, fmt.Errorf("user %q is not a valid login name", m.User)
	}
	if len(m.AuthorizedKeys) == 0 {
		return nil, errors.New("no authorized key")
	}
	keys := make([]string, len(m.AuthorizedKeys))
	for i, k := range m.AuthorizedKeys {
		norm, err := authorizedKeyLine(k)
		if err != nil {
			return nil, fmt.Errorf("authorized key %d: %w", i, err)
		}
		keys[i] = norm
	}
	if err := m.HostKey.check(); err != nil {
		return nil, err
	}

	doc := userData{
		Hostname:       m.Hostname,
		FQDN:           m.FQDN,
		ManageEtcHosts: true,
		Users: []user{{
			Name:              m.User,
			Shell:             "/bin/bash",
			Sudo:              "ALL=(ALL) NOPASSWD:ALL",
			LockPasswd:        true,
			SSHAuthorizedKeys: keys,
		}},
		DisableRoot:   true,
		SSHPwAuth:     false,
		SSHDeleteKeys: true,
		SSHKeys: sshKeys{
			ED25519Private: m.HostKey.Private.Reveal(),
			ED25519Public:  m.HostKey.Public,
		},
	}
	if m.NodeExporter {
		doc.PackageUpdate = true
		doc.Packages = []string{NodeExporterPackage}
		doc.RunCmd = [][]string{{"systemctl", "enable", "--now", NodeExporterService}}
	}
	return encode(doc)
}

// authorizedKeyLine checks that k is one authorized_keys line and returns it without trailing
// white space. A newline inside an item would smuggle a second key into authorized_keys.
func authorizedKeyLine(k string) (string, error) {
	k = strings.TrimSpace(k)
	if strings.ContainsAny(k, "\r\n") {
		return "", errors.New("holds more than one line")
	}
	if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k)); err != nil {
		return "", fmt.Errorf("parse: %w", err)
	}
	return k, nil
}

func validDNSName(name string) bool {
	if len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if !labelRE.MatchString(label) {
			return false
		}
	}
	return true
}

// encode writes v as a #cloud-config document with two-space indentation.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(header)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode cloud-config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode cloud-config: %w", err)
	}
	return buf.Bytes(), nil
}
