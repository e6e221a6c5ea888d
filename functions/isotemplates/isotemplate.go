// Package isotemplates serves /v1/iso-templates: the catalogue of ISO templates — what an ISO
// build downloads and builds (shared/isotemplate) — and their immutable numbered versions, like
// /v1/templates. Admins write; every authenticated user reads.
//
// Decisions:
//
//   - A template's kind (iso or cloud-image) is fixed at creation; each version carries a spec
//     of that kind, sent as a JSON object in the spec field, parsed strictly (unknown fields,
//     wrong types) and validated with every problem reported at once under "spec.…". The
//     stored spec is canonical JSON with its defaults filled, and its hash.
//   - Versions are numbered 1, 2, … under the template's row lock; an ISO pins one, and a new
//     version changes no ISO until an admin edits the ISO to use it.
//   - active (default true) says whether new ISOs may be built from the template.
package isotemplates

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"horizon/shared/horizon"
	"horizon/shared/isotemplate"
	"horizon/shared/problem"
)

// ISOTemplate is an ISO template as lists show it.
type ISOTemplate struct {
	ID            uuid.UUID  `json:"id"`
	Name          string     `json:"name"`
	Description   string     `json:"description"`
	Kind          string     `json:"kind"`
	Active        bool       `json:"active"`
	LatestVersion int        `json:"latest_version"`
	CreatedBy     *uuid.UUID `json:"created_by"`
	Version       int64      `json:"version"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// Detail is an ISO template with its versions, oldest first.
type Detail struct {
	ISOTemplate
	Versions []VersionSummary `json:"versions"`
}

// VersionSummary is one version as a template's detail lists it.
type VersionSummary struct {
	Number    int        `json:"number"`
	SpecHash  string     `json:"spec_hash"`
	CreatedBy *uuid.UUID `json:"created_by"`
	CreatedAt time.Time  `json:"created_at"`
}

// Version is one version in full: its spec with defaults filled, and the stages it builds.
type Version struct {
	ISOTemplateID uuid.UUID       `json:"iso_template_id"`
	Number        int             `json:"number"`
	Spec          json.RawMessage `json:"spec"`
	SpecHash      string          `json:"spec_hash"`
	Stages        []string        `json:"stages"`
	CreatedBy     *uuid.UUID      `json:"created_by"`
	CreatedAt     time.Time       `json:"created_at"`
}

func toISOTemplate(t horizon.ISOTemplate) ISOTemplate {
	return ISOTemplate{ID: t.ID, Name: t.Name, Description: t.Description, Kind: string(t.Kind), Active: t.Active,
		LatestVersion: t.LatestVersion, CreatedBy: t.CreatedBy, Version: t.Version, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func toDetail(t horizon.ISOTemplate) Detail {
	vs := make([]VersionSummary, len(t.Versions))
	for i, v := range t.Versions {
		vs[i] = VersionSummary{Number: v.Number, SpecHash: v.SpecHash, CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt}
	}
	return Detail{ISOTemplate: toISOTemplate(t), Versions: vs}
}

func toVersion(kind horizon.ISOKind, v horizon.ISOTemplateVersion) (Version, error) {
	spec, err := isotemplate.Decode(v.Spec)
	if err != nil {
		return Version{}, err
	}
	var stages []string
	for _, s := range spec.Stages(kind) {
		stages = append(stages, string(s))
	}
	return Version{ISOTemplateID: v.ISOTemplateID, Number: v.Number, Spec: v.Spec, SpecHash: v.SpecHash, Stages: stages,
		CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt}, nil
}

// newVersion parses a spec of kind into the version to store; problems are under "spec".
func newVersion(kind horizon.ISOKind, raw json.RawMessage, who uuid.UUID) (horizon.ISOTemplateVersion, error) {
	spec, err := isotemplate.Parse(kind, raw, "spec")
	if err != nil {
		return horizon.ISOTemplateVersion{}, err
	}
	return horizon.ISOTemplateVersion{Spec: spec.Canonical(), SpecHash: spec.Hash(), CreatedBy: &who}, nil
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
	return "/v1/iso-templates/" + id.String() + "/versions/" + strconv.Itoa(n)
}

const maxDescription = 2000
