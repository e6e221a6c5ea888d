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
