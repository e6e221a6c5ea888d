// Package lint holds the repository's structural checks, run with the tests: which packages may
// import which, and that no compiled program or file over 1 MiB outside testdata/ is committed.
// gofmt, go vet and staticcheck run before the tests in the Taskfile's test task.
package lint
