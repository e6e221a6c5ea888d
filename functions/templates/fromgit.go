package templates

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"

	"horizon/functions/api"
	"horizon/shared/gitcred"
	"horizon/shared/gitsource"
	"horizon/shared/horizon"
	"horizon/shared/template"
)

// Source is where a definition is read from instead of the request's body: a file of a
// repository's branch, fetched with the registered git credentials (matched by URL prefix).
type Source struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	// Path is the file in the repository; template.yaml by default.
	Path string `json:"path"`
}

// definitionOf is the definition a request gives: its definition, or the file its source names
// at the branch's current commit. Exactly one of the two.
func definitionOf(ctx context.Context, d api.Deps, definition json.RawMessage, src *Source) (json.RawMessage, error) {
	if src == nil {
		return definition, nil
	}
	if len(definition) > 0 && string(definition) != "null" {
		return nil, horizon.Invalid("source", "give either definition or source, not both")
	}
	var p horizon.Problems
	if src.Repo == "" {
		p.Add("source.repo", "is required")
	}
	if src.Branch == "" {
		p.Add("source.branch", "is required")
	}
	path := src.Path
	if path == "" {
		path = "template.yaml"
	}
	if !fs.ValidPath(path) || path == "." {
		p.Add("source.path", "must be a file's path inside the repository, e.g. template.yaml")
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	creds, err := gitcred.For(ctx, d.DB, d.Box, []string{src.Repo})
	if err != nil {
		return nil, err
	}
	commit, err := d.Git.Resolve(ctx, src.Repo, src.Branch, creds[src.Repo])
	if err != nil {
		return nil, gitProblem(err)
	}
	dir, err := d.Git.Tree(ctx, src.Repo, commit, creds[src.Repo])
	if err != nil {
		return nil, gitProblem(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(path)
	if err != nil {
		return nil, horizon.Invalid("source.path", "is not a file of %s at %.12s", src.Branch, commit)
	}
	defer f.Close()
	// One byte more than the limit: parseDefinition refuses what is larger (413).
	b, err := io.ReadAll(io.LimitReader(f, template.MaxSize+1))
	if err != nil {
		return nil, horizon.Invalid("source.path", "cannot be read: is it a file?")
	}
	return json.Marshal(string(b))
}

// gitProblem names the source field a git error is about; errors that are not the author's to
// fix pass through.
func gitProblem(err error) error {
	switch {
	case errors.Is(err, gitsource.ErrBranchNotFound), errors.Is(err, gitsource.ErrCommitNotFound):
		return horizon.Invalid("source.branch", "%s", err.Error())
	case errors.Is(err, gitsource.ErrInvalidURL), errors.Is(err, gitsource.ErrRepoNotFound), errors.Is(err, gitsource.ErrUnreachable),
		errors.Is(err, gitsource.ErrAuth), errors.Is(err, gitsource.ErrHostKey), errors.Is(err, gitsource.ErrUnsafeTree):
		return horizon.Invalid("source.repo", "%s", err.Error())
	}
	return err
}
