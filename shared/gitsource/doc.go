// Package gitsource is Horizon's local cache of git sources: it resolves a branch to the commit
// it points to now (Resolve) and materialises a repository's files at a commit (Tree), through
// the git CLI.
//
// Layout of Config.Dir, shared by every worker process of a host:
//
//	repos/<key>.git     one bare clone per repository URL (key: a hash of the URL as given)
//	repos/<key>.lock    the repository's lock file (flock)
//	trees/<key>/<commit> one read-only tree per repository and commit, shared by all executions
//	tmp/                short-lived private files (SSH keys, known_hosts), removed after use
//	home/               an empty HOME for git and ssh
//
// Decisions:
//
//   - Network use is minimal and predictable. Resolve always lists the branch on the server (one
//     ls-remote: cheap, and the only way to see new commits) and fetches only when the commit is
//     missing from the bare clone. Tree never touches the network for a commit the cache has.
//     Stats counts listings and fetches.
//   - Concurrency: every write to a repository's clone or trees happens under its lock, an
//     in-process channel in front of an flock on repos/<key>.lock, so goroutines and processes
//     sharing the directory serialise per repository and a fetch done by one is seen by the
//     others (they re-check after taking the lock). Reads take no lock: fetched objects land in
//     packs, which appear atomically, and a tree appears only by rename once complete.
//   - Crash safety: bare clones and trees are built under temporary names and renamed; leftovers
//     (and git's own stale *.lock files) are removed the next time the lock is held. Trees are
//     fsynced before the rename.
//   - URLs are https://, ssh:// or file:// only (CheckURL); git runs with GIT_ALLOW_PROTOCOL
//     limited to those, every URL is passed after "--", and nothing of the caller's environment
//     but PATH reaches git (no user or system config, helpers, prompts or agents).
//   - Credentials never appear in a URL, on a command line or in an error. An https:// token
//     becomes an Authorization header set through GIT_CONFIG_* variables of the one git
//     process, with redirects off so it cannot follow one elsewhere. An ssh:// key is written
//     0600 to a private temporary directory, removed when the command ends, and used with
//     IdentitiesOnly; the server's host key must be pinned (Credentials.SSHHostKey) and is
//     checked strictly. Git's standard error is scrubbed of the token, the key and any
//     user:password@ before it becomes an error message.
//   - Errors callers branch on are sentinels (ErrRepoNotFound, ErrBranchNotFound, …), told apart
//     from git's standard error in the C locale. Every git command is bounded by
//     Config.Timeout and killed with its whole process group when it runs out.
//   - The cache never garbage-collects: a pinned commit stays even after a force-push made it
//     unreachable. Fetching by commit id (Tree on a cold cache) needs a server that allows it
//     for reachable commits, which protocol v2 servers do.
//   - Submodules and LFS objects are not fetched. Symbolic links that leave the tree (or do not
//     resolve) make Tree fail with ErrUnsafeTree.
package gitsource
