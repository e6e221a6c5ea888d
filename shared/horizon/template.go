package horizon

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Template is a catalogue entry stacks are made from. Only an active template can start new
// stacks; deactivating one leaves the stacks already made from it alone. LatestVersion is the
// number of its newest version (versions are numbered 1, 2, …).
type Template struct {
	ID            uuid.UUID
	Name          string
	Description   string
	Active        bool
	LatestVersion int
	CreatedBy     *uuid.UUID
	Version       int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Versions lists the template's versions, oldest first, when the store was asked for them.
	Versions []TemplateVersionSummary
}

// TemplateVersionSummary is what a template's detail lists of each of its versions.
type TemplateVersionSummary struct {
	Number         int
	DefinitionHash string
	CreatedBy      *uuid.UUID
	CreatedAt      time.Time
}

// TemplateVersion is one immutable version of a template. The definition and the modules are
// kept as the JSON of shared/template's Definition and Modules, which this package cannot
// name; JobCommits and ActionCommits map each job and terraform action to the commit its
// branch pointed to when the version was made.
type TemplateVersion struct {
	TemplateID     uuid.UUID
	Number         int
	Definition     json.RawMessage
	DefinitionHash string
	JobCommits     map[string]string
	ActionCommits  map[string]string
	Modules        json.RawMessage
	CreatedBy      *uuid.UUID
	CreatedAt      time.Time
}

// GitCredential gives Horizon access to the private git repositories whose URLs start with
// URLPrefix (at a '/' boundary). Kind is "https" (Username and a token) or "ssh" (a private
// key and the server's pinned host key). The secrets stay sealed (shared/secrets) in Token and
// SSHPrivateKey; they are opened only to talk to git.
type GitCredential struct {
	ID            uuid.UUID
	Name          string
	URLPrefix     string
	Kind          string
	Username      string
	Token         []byte // sealed, purpose "git_credentials.token"; https only
	SSHPrivateKey []byte // sealed, purpose "git_credentials.ssh_private_key"; ssh only
	SSHHostKey    string // authorized_keys form, one or more lines; ssh only
	CreatedBy     *uuid.UUID
	CreatedAt     time.Time
}

// The GitCredential kinds.
const (
	GitCredentialHTTPS = "https"
	GitCredentialSSH   = "ssh"
)
