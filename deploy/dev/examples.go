package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"horizon/shared/template"
)

// exampleRepoURL is the placeholder repository of deploy/examples/sandbox-vm/template.yaml.
const exampleRepoURL = "https://git.example.org/horizon/sandbox-vm.git"

// registerExample publishes deploy/examples/sandbox-vm to a local git repository
// (.data/examples/sandbox-vm, committing only when its files changed) and makes it the template
// "sandbox-vm": created the first time, given a new version when the template changed since its
// latest version (GET …/changes), left alone otherwise.
func registerExample(ctx context.Context, url, token, root, data string) error {
	src := filepath.Join(root, "deploy", "examples", "sandbox-vm")
	repo := filepath.Join(data, "examples", "sandbox-vm")
	if err := publish(ctx, src, repo); err != nil {
		return fmt.Errorf("publish %s: %w", src, err)
	}
	doc, err := os.ReadFile(filepath.Join(src, "template.yaml"))
	if err != nil {
		return err
	}
	definition := strings.ReplaceAll(string(doc), exampleRepoURL, "file://"+repo)

	def, err := template.Parse([]byte(definition))
	if err != nil {
		return err
	}
	var list struct {
		Items []struct {
			ID            string `json:"id"`
			Name          string `json:"name"`
			LatestVersion int    `json:"latest_version"`
		} `json:"items"`
	}
	if err := call(ctx, url, token, "GET", "/v1/templates?limit=200", nil, &list); err != nil {
		return err
	}
	for _, t := range list.Items {
		if t.Name != "sandbox-vm" {
			continue
		}
		latest := fmt.Sprintf("/v1/templates/%s/versions/%d", t.ID, t.LatestVersion)
		var v struct {
			DefinitionHash string `json:"definition_hash"`
		}
		if err := call(ctx, url, token, "GET", latest, nil, &v); err != nil {
			return err
		}
		var ch struct {
			Changed bool `json:"changed"`
		}
		if v.DefinitionHash == def.Hash() {
			if err := call(ctx, url, token, "GET", latest+"/changes", nil, &ch); err != nil {
				return err
			}
			if !ch.Changed {
				return nil
			}
		}
		return call(ctx, url, token, "POST", "/v1/templates/"+t.ID+"/versions", map[string]any{"definition": definition}, nil)
	}
	return call(ctx, url, token, "POST", "/v1/templates", map[string]any{"definition": definition}, nil)
}

// publish makes repo a git repository on branch main whose last commit holds exactly the files
// of src.
func publish(ctx context.Context, src, repo string) error {
	if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
		if err := os.MkdirAll(repo, 0o755); err != nil {
			return err
		}
		if err := git(ctx, repo, "init", "--quiet", "--initial-branch=main"); err != nil {
			return err
		}
	}
	// Replace the work tree with src's files (keeping .git), then commit whatever differs.
	entries, err := os.ReadDir(repo)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(repo, e.Name())); err != nil {
				return err
			}
		}
	}
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(repo, rel), 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(repo, rel), b, info.Mode().Perm())
	})
	if err != nil {
		return err
	}
	if err := git(ctx, repo, "add", "--all"); err != nil {
		return err
	}
	if git(ctx, repo, "diff", "--cached", "--quiet") == nil {
		if git(ctx, repo, "rev-parse", "--verify", "--quiet", "HEAD") == nil {
			return nil // nothing changed since the last commit
		}
	}
	return git(ctx, repo, "commit", "--quiet", "--allow-empty", "-m", "deploy/examples/sandbox-vm")
}

// git runs git in dir without the user's configuration.
func git(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=horizon dev", "GIT_AUTHOR_EMAIL=dev@horizon.invalid", "GIT_COMMITTER_NAME=horizon dev", "GIT_COMMITTER_EMAIL=dev@horizon.invalid"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
