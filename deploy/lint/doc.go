// Package lint holds the repository's structural checks, run with the tests: which packages may
// import which. gofmt, go vet and staticcheck run before the tests in the Taskfile's test task.
package lint
