// Package templates serves /v1/templates: the catalogue of templates, their immutable numbered
// versions, the creation form of each version and the "changed since pinned" check. Admins
// write; every authenticated user (members and viewers too) reads.
//
// Decisions:
//
//   - A definition is sent in the definition field either as a string holding the YAML or JSON
//     document (what an operator has in a file, comments and all) or as a JSON object. Both go
//     through template.Parse, so both are checked the same way and every problem is reported at
//     once, its field the document path under "definition" (e.g.
//     "definition.phases[1].jobs[0].inputs.join_command"). Only the parsed definition is kept,
//     as canonical JSON with its hash: comments and formatting of a YAML upload are not.
//   - Git is read inside the upload request. Creating a version resolves each job's and
//     terraform action's branch to a commit, materialises the tree and inspects the module
//     (template.Inspect) through the API's git cache (api.Deps.Git), with the credentials the
//     admin registered (gitcred). Uploading is a rare admin action that must answer "valid or
//     not, and why" at once, which a queued task could only report later; it is bounded by the
//     request deadline (HORIZON_REQUEST_TIMEOUT) and each git command by the cache's timeout.
//     Nothing is written before git answered, and the transaction that writes the version holds
//     no lock while git runs. Git problems the author can fix (no such repository or branch,
//     credentials refused, a link leaving the repository) are 422 on the source's field.
//   - A version records the commit of every source and the inspected modules (variables and
//     outputs), so that the form, and later stacks, never need git to read it. Stored versions
//     are decoded, not re-validated: rules may tighten, old versions must still load.
//   - Numbers: versions are 1, 2, … per template, assigned under the template's row lock. A new
//     version changes the template (its latest_version), so its ETag moves.
//   - name and description of a template default to the definition's on creation; afterwards
//     they are the catalogue's own (PATCH) and versions do not change them.
//   - active (default true) says whether the template may start new stacks; stacks made from
//     it before it was deactivated are unaffected. The stacks API enforces it.
//   - "Changed since pinned" (GET …/versions/{v}/changes, and template.Compare for the stacks'
//     upgrade) compares the version's definition hash with the latest version's, and the commit
//     pinned for each source with what its branch points to now: one ref listing per distinct
//     branch, no tree read.
//   - A definition larger than template.MaxSize is 413. Through this API the body limit (1 MiB,
//     the same size, and a body is larger than the definition it carries) answers 413 first; the
//     definition's own check stays as the safeguard should either limit change.
package templates

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/template"
)

// Template is a template as lists show it.
type Template struct {
	ID            uuid.UUID  `json:"id"`
	Name          string     `json:"name"`
	Description   string     `json:"description"`
	Active        bool       `json:"active"`
	LatestVersion int        `json:"latest_version"`
	CreatedBy     *uuid.UUID `json:"created_by"`
	Version       int64      `json:"version"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// Detail is a template with its versions, oldest first.
type Detail struct {
	Template
	Versions []VersionSummary `json:"versions"`
}

// VersionSummary is one version as a template's detail lists it.
type VersionSummary struct {
	Number         int        `json:"number"`
	DefinitionHash string     `json:"definition_hash"`
	CreatedBy      *uuid.UUID `json:"created_by"`
	CreatedAt      time.Time  `json:"created_at"`
}

// Version is one template version in full.
type Version struct {
	TemplateID     uuid.UUID       `json:"template_id"`
	Number         int             `json:"number"`
	Definition     json.RawMessage `json:"definition"`
	DefinitionHash string          `json:"definition_hash"`
	Commits        Commits         `json:"commits"`
	Modules        json.RawMessage `json:"modules"`
	CreatedBy      *uuid.UUID      `json:"created_by"`
	CreatedAt      time.Time       `json:"created_at"`
}

// Commits are the commits a version pinned, by job and by terraform action.
type Commits struct {
	Jobs    map[string]string `json:"jobs"`
	Actions map[string]string `json:"actions"`
}

func toTemplate(t horizon.Template) Template {
	return Template{ID: t.ID, Name: t.Name, Description: t.Description, Active: t.Active, LatestVersion: t.LatestVersion,
		CreatedBy: t.CreatedBy, Version: t.Version, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func toDetail(t horizon.Template) Detail {
	vs := make([]VersionSummary, len(t.Versions))
	for i, v := range t.Versions {
		vs[i] = VersionSummary{Number: v.Number, DefinitionHash: v.DefinitionHash, CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt}
	}
	return Detail{Template: toTemplate(t), Versions: vs}
}

func toVersion(v horizon.TemplateVersion) Version {
	jobs, actions := v.JobCommits, v.ActionCommits
	if jobs == nil {
		jobs = map[string]string{}
	}
	if actions == nil {
		actions = map[string]string{}
	}
	return Version{TemplateID: v.TemplateID, Number: v.Number, Definition: v.Definition, DefinitionHash: v.DefinitionHash,
		Commits: Commits{Jobs: jobs, Actions: actions}, Modules: v.Modules, CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt}
}

// decode returns a stored version's definition and modules. They were valid when written and
// are not validated again.
func decode(v horizon.TemplateVersion) (*template.Definition, template.Modules, error) {
	var def template.Definition
	var mods template.Modules
	if err := json.Unmarshal(v.Definition, &def); err != nil {
		return nil, mods, fmt.Errorf("decode definition of template %s version %d: %w", v.TemplateID, v.Number, err)
	}
	if err := json.Unmarshal(v.Modules, &mods); err != nil {
		return nil, mods, fmt.Errorf("decode modules of template %s version %d: %w", v.TemplateID, v.Number, err)
	}
	return &def, mods, nil
}

// paramVersion parses the {v} path parameter, a version number.
func paramVersion(c *fiber.Ctx) (int, error) {
	n, err := strconv.Atoi(c.Params("v"))
	if err != nil || n < 1 {
		return 0, problem.Malformed("The v in the path must be a version number (1, 2, …).")
	}
	return n, nil
}

func versionPath(id uuid.UUID, n int) string {
	return "/v1/templates/" + id.String() + "/versions/" + strconv.Itoa(n)
}

const maxDescription = 2000
