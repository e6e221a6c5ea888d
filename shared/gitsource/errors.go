package gitsource

import "errors"

// Errors callers branch on with errors.Is. Every error of Resolve and Tree that is the
// repository's or the user's fault wraps exactly one of them; the API turns them into 422
// field errors. Their messages never contain a credential.
var (
	// ErrInvalidURL: the repository URL is not one the cache accepts (see CheckURL).
	ErrInvalidURL = errors.New("invalid repository URL")
	// ErrRepoNotFound: the server answered, and has no repository at that URL (or hides it
	// from these credentials, as GitHub does).
	ErrRepoNotFound = errors.New("repository not found")
	// ErrUnreachable: the server could not be reached, or did not answer in time.
	ErrUnreachable = errors.New("repository unreachable")
	// ErrBranchNotFound: the repository has no such branch.
	ErrBranchNotFound = errors.New("branch not found")
	// ErrCommitNotFound: the repository has no such commit (or the id is not a full one).
	ErrCommitNotFound = errors.New("commit not found")
	// ErrAuth: the server refused the credentials, or needs some and none were given.
	ErrAuth = errors.New("authentication failed")
	// ErrHostKey: an ssh:// server's host key is not the pinned one, or none is pinned.
	ErrHostKey = errors.New("host key verification failed")
	// ErrUnsafeTree: the commit has a symbolic link that points outside the repository.
	ErrUnsafeTree = errors.New("tree has a symbolic link leaving the repository")
)
