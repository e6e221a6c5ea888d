package template

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sync"

	"horizon/shared/gitsource"
	"horizon/shared/horizon"
)

// Inspect reads, for every job and terraform action of a valid definition, the module its
// branch holds now: it resolves the branch to a commit, materialises the tree, loads the module
// at the source path, and then checks everything with CheckModules. It returns the modules
// (each with its Commit) by job and action name: what a template version or a new stack pins.
//
// The branches of a repository are resolved together once per call, and a repository and
// commit read once, so the network cost is one ref listing per distinct repository, plus a
// fetch per repository whose commits the cache does not have yet. creds maps a repository URL to its credentials;
// a repository missing from it is accessed anonymously.
//
// Whatever the template's author can fix is a *horizon.ValidationError with document paths
// (the repository not found or unreachable, credentials or host key refused: source.repo; a
// missing branch: source.branch; no or a broken module: source.path; and every CheckModules
// problem). Anything else — the context ended, the cache is broken — is returned as it is, with
// nil modules.
func Inspect(ctx context.Context, d *Definition, git *gitsource.Cache, creds map[string]gitsource.Credentials) (Modules, error) {
	type resolved struct {
		dir, commit string
		err         error
	}
	byBranch := map[branchKey]resolved{}
	commits := resolveBranches(ctx, d.sources(), git, creds)
	roots := map[string]*os.Root{} // by tree directory
	defer func() {
		for _, r := range roots {
			_ = r.Close() // read-only use; nothing to flush
		}
	}()

	mods := Modules{Jobs: map[string]*Module{}, Actions: map[string]*Module{}}
	trees := map[string]fs.FS{}
	var p horizon.Problems
	for _, s := range d.sources() {
		k := branchKey{s.src.Repo, s.src.Branch}
		r, seen := byBranch[k]
		if !seen {
			r.commit, r.err = commits[k].Commit, commits[k].Err
			if r.err == nil {
				r.dir, r.err = git.Tree(ctx, k.repo, r.commit, creds[k.repo])
			}
			byBranch[k] = r
		}
		if r.err != nil {
			field, ok := sourceField(r.err)
			if !ok {
				return Modules{}, fmt.Errorf("inspect %s: %w", s.path, r.err)
			}
			p.Add(horizon.JoinPath(s.path, field), "%v", r.err)
			continue
		}
		root, ok := roots[r.dir]
		if !ok {
			var err error
			// os.Root keeps every read inside the tree, whatever its links say.
			if root, err = os.OpenRoot(r.dir); err != nil {
				return Modules{}, fmt.Errorf("open tree %s: %w", r.dir, err)
			}
			roots[r.dir] = root
		}
		dir := s.src.Path
		if dir == "" {
			dir = "."
		}
		// fs.Sub refuses a path that leaves the tree, even if Validate was skipped.
		src, err := fs.Sub(root.FS(), dir)
		if err != nil {
			p.Add(s.path+".path", "not a directory of the repository: %q", s.src.Path)
			continue
		}
		key := modKey{repo: k.repo, commit: r.commit, path: path.Clean(dir)}
		mod, cached := moduleCache.get(key)
		if !cached {
			var err error
			if mod, err = LoadModule(src); err != nil {
				p.Add(s.path+".path", "%s at commit %s: %v", describePath(s.src.Path), r.commit, err)
				continue
			}
			moduleCache.put(key, mod)
		}
		mod.Commit = r.commit
		if s.job != "" {
			mods.Jobs[s.job] = mod
			trees[s.job] = src
		} else {
			mods.Actions[s.action] = mod
		}
	}
	p.Merge("", CheckModules(d, mods, trees))
	return mods, p.Err()
}

// sourceField names the source field a gitsource error is about, or reports that the error is
// not the template author's to fix.
func sourceField(err error) (string, bool) {
	switch {
	case errors.Is(err, gitsource.ErrBranchNotFound), errors.Is(err, gitsource.ErrCommitNotFound):
		return "branch", true
	case errors.Is(err, gitsource.ErrUnsafeTree):
		return "", true
	case errors.Is(err, gitsource.ErrInvalidURL), errors.Is(err, gitsource.ErrRepoNotFound),
		errors.Is(err, gitsource.ErrUnreachable), errors.Is(err, gitsource.ErrAuth), errors.Is(err, gitsource.ErrHostKey):
		return "repo", true
	}
	return "", false
}

func describePath(p string) string {
	if p == "" {
		return "the repository root"
	}
	return p
}

type branchKey struct{ repo, branch string }

// listingsAtOnce bounds the repositories resolveBranches lists at once: a listing is mostly
// waiting on a remote, but each is a git process.
const listingsAtOnce = 4

// resolveBranches resolves the branch of every source, with one ref listing per repository
// (gitsource.Cache.ResolveBranches). The repositories are listed at once, so that a version of
// several repositories whose commits the cache holds costs about one listing, not their sum.
func resolveBranches(ctx context.Context, sources []sourced, git *gitsource.Cache, creds map[string]gitsource.Credentials) map[branchKey]gitsource.Resolved {
	byRepo := map[string][]string{}
	for _, s := range sources {
		byRepo[s.src.Repo] = append(byRepo[s.src.Repo], s.src.Branch)
	}
	out := map[branchKey]gitsource.Resolved{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, listingsAtOnce)
	for repo, branches := range byRepo {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			resolved := git.ResolveBranches(ctx, repo, branches, creds[repo])
			mu.Lock()
			defer mu.Unlock()
			for branch, r := range resolved {
				out[branchKey{repo, branch}] = r
			}
		})
	}
	wg.Wait()
	return out
}
