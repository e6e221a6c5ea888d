package templates

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"horizon/functions/api"
	"horizon/shared/gitcred"
	"horizon/shared/horizon"
	"horizon/shared/problem"
	"horizon/shared/template"
)

// parseDefinition reads the definition field of a request: a string holding a YAML or JSON
// document, or a JSON object. Its problems are recorded in p under "definition"; the result is
// nil when there is any. A document over template.MaxSize is a 413 error.
func parseDefinition(p *horizon.Problems, raw json.RawMessage) (*template.Definition, error) {
	doc := bytes.TrimSpace(raw)
	switch {
	case len(doc) == 0 || bytes.Equal(doc, []byte("null")):
		p.Add("definition", "is required: the template document, as a YAML or JSON string or a JSON object")
		return nil, nil
	case doc[0] == '"':
		var s string
		if err := json.Unmarshal(doc, &s); err != nil {
			return nil, problem.Malformed("The definition string is not valid JSON.")
		}
		doc = []byte(s)
	case doc[0] != '{':
		p.Add("definition", "must be a JSON object, or a string holding the YAML or JSON document")
		return nil, nil
	}
	def, err := template.Parse(doc)
	if errors.Is(err, template.ErrTooLarge) {
		return nil, problem.New(problem.TypeTooLarge, 413, "The definition is larger than the limit of %d bytes.", template.MaxSize)
	}
	if err != nil {
		if !p.Merge("definition", err) {
			return nil, fmt.Errorf("parse definition: %w", err)
		}
		return nil, nil
	}
	return def, nil
}

// inspect resolves and inspects every source of def through the API's git cache, with the
// registered credentials. Problems the author can fix are a *horizon.ValidationError under
// "definition".
func inspect(ctx context.Context, d api.Deps, def *template.Definition) (template.Modules, error) {
	creds, err := gitcred.For(ctx, d.DB, d.Box, def.Repos())
	if err != nil {
		return template.Modules{}, err
	}
	mods, err := template.Inspect(ctx, def, d.Git, creds)
	if err != nil {
		var p horizon.Problems
		if p.Merge("definition", err) {
			return template.Modules{}, p.Err()
		}
		return template.Modules{}, err
	}
	return mods, nil
}

// newVersion is the version to store for an inspected definition.
func newVersion(def *template.Definition, mods template.Modules, who uuid.UUID) (horizon.TemplateVersion, error) {
	defJSON, err := json.Marshal(def)
	if err != nil {
		return horizon.TemplateVersion{}, fmt.Errorf("encode definition: %w", err)
	}
	modsJSON, err := json.Marshal(mods)
	if err != nil {
		return horizon.TemplateVersion{}, fmt.Errorf("encode modules: %w", err)
	}
	jobs, actions := mods.Commits()
	return horizon.TemplateVersion{Definition: defJSON, DefinitionHash: def.Hash(), JobCommits: jobs, ActionCommits: actions,
		Modules: modsJSON, CreatedBy: &who}, nil
}
