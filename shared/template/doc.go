// Package template owns the template definition: parsing a YAML or JSON document strictly
// (Parse), validating it (Validate), the job dependency graph (Dependencies, Dependents), users'
// answers (Parameter.Check, Parameters.Check), the content hash (Hash), inspecting each job's
// Terraform module at its commit (LoadModule, Inspect) and checking the two against each other
// (CheckModules), and the form schema a frontend draws the creation form from (Form).
//
// Every validator reports all problems at once as a *horizon.ValidationError whose fields are
// document paths ("phases[1].jobs[0].inputs.join_command"); answer checks report paths relative
// to the job (the parameter's name), for the caller to prefix.
//
// Decisions:
//
//   - Parsing. YAML 1.2 through yaml.Node, decoded by a strict walker of our own: unknown keys,
//     wrong types, duplicate keys and custom tags are problems. Anchors and aliases are refused
//     and never followed, so an alias bomb costs only its own size. A document is at most
//     MaxSize (1 MiB; ErrTooLarge, for a 413) and reports at most 100 problems. Numbers are
//     float64, as encoding/json has them; integers stay within ±2^53 so that a definition
//     survives JSON (and a JavaScript frontend) unchanged.
//   - Names. Template, phase, job, script and action names are lowercase DNS-label-like slugs
//     ([a-z], then [a-z0-9-], not ending with '-'); job names, which become part of Terraform
//     workspace names (s<stack>-<job>-<n>), Proxmox VM names and hostnames, are at most 32
//     characters, others 63. Parameter, input and script output names are lowercase snake case
//     (they are Terraform variables and script environment variables), at most 63, and the
//     horizon_ prefix is reserved. Job names are unique across the template.
//   - Inputs are exactly one reference, "${jobs.<job>.outputs.<output>}", to a job of an earlier
//     phase. Since phases run in order, this also makes cycles impossible: a cycle needs a
//     reference to the same or a later phase, which is the problem reported. Action inputs may
//     reference any job. An input and a parameter of one job never share a name.
//   - Outputs. A job's outputs are its module's outputs plus those its scripts emit through
//     $HORIZON_OUTPUT / $HORIZON_SECRET_OUTPUT, which the job must declare under outputs: (so a
//     reference can be checked at upload); a declared output needs scripts to emit it and must
//     not shadow a module output.
//   - Paths. source.path is relative to the repository root (empty is the root). Script,
//     cleanup and script-action paths are relative to the job's source path, so a job's
//     directory holds everything it runs. Paths are clean, relative and never contain "..".
//   - Parameters. Types are string, integer, number and boolean. Only strings can be secret
//     (masking "true" or "8" in logs would mask everything), a secret has no default (the
//     template is not a secret store), generate needs a secret string with no enum or pattern.
//     A parameter is required when it has no default and is not generated. A pattern is a Go
//     regular expression used unanchored, as JSON Schema does (write ^…$).
//   - Executions. Default one; multiple: true allows min..max, min defaulting to 1 and max to
//     MaxExecutions (100). add-first/remove-first order replacements (default remove-first).
//   - Machines. Only a machine job may have iso, scripts, cleanup scripts, Nagios checks, or be
//     the job of a script action: all of them need the VM. A script action runs on one machine
//     of its job, chosen by the user, and declares the outputs its script emits as a job does
//     (a terraform action's outputs are its module's).
//   - Module checks (CheckModules, at upload and whenever a new commit is pinned): every
//     parameter and input must be a variable of the module — Terraform is a job's contract, and
//     the scripts receive the same values; every required variable must be filled by a
//     parameter, an input or a horizon_* variable Horizon gives that kind of job; any other
//     horizon_* variable is an error, as a typo would otherwise silently get nothing.
//   - Hash is sha256 over the definition's canonical JSON. "The template changed since a stack
//     pinned it" (Compare) combines two facts: the current version's hash differs from the
//     pinned version's, or a job's branch now resolves (gitsource.Cache.Resolve) to another
//     commit than the one pinned.
package template
