// Package templates serves /v1/templates: the catalogue of templates, their immutable numbered
// versions, the creation form of each version and the "changed since pinned" check. Admins
// write; every authenticated user (members and viewers too) reads.
//
// Decisions:
//
//   - A definition is sent in the definition field either as a string holding the YAML or JSON
//     document (what an operator has in a file, comments and all) or as a JSON object. Both go
//     through template.Parse, so both are checked the same way and every problem is reported at
//     once, its field the document path under "definition" (e.g.
//     "definition.phases[1].jobs[0].inputs.join_command"). Only the parsed definition is kept,
//     as canonical JSON with its hash: comments and formatting of a YAML upload are not.
//   - Git is read inside the upload request. Creating a version resolves each job's and
//     terraform action's branch to a commit, materialises the tree and inspects the module
//     (template.Inspect) through the API's git cache (api.Deps.Git), with the credentials the
//     admin registered (gitcred). Uploading is a rare admin action that must answer "valid or
//     not, and why" at once, which a queued task could only report later; it is bounded by the
//     request deadline (HORIZON_REQUEST_TIMEOUT) and each git command by the cache's timeout.
//     Nothing is written before git answered, and the transaction that writes the version holds
//     no lock while git runs. Git problems the author can fix (no such repository or branch,
//     credentials refused, a link leaving the repository) are 422 on the source's field.
//   - A version records the commit of every source and the inspected modules (variables and
//     outputs), so that the form, and later stacks, never need git to read it. Stored versions
//     are decoded, not re-validated: rules may tighten, old versions must still load.
//   - Numbers: versions are 1, 2, … per template, assigned under the template's row lock. A new
//     version changes the template (its latest_version), so its ETag moves.
//   - name and description of a template default to the definition's on creation; afterwards
//     they are the catalogue's own (PATCH) and versions do not change them.
//   - active (default true) says whether the template may start new stacks; stacks made from
//     it before it was deactivated are unaffected. The stacks API enforces it.
//   - "Changed since pinned" (GET …/versions/{v}/changes, and template.Compare for the stacks'
//     upgrade) compares the version's definition hash with the latest version's, and the commit
//     pinned for each source with what its branch points to now: one ref listing per distinct
//     branch, no tree read.
//   - A definition larger than template.MaxSize is 413. Through this API the body limit (1 MiB,
//     the same size, and a body is larger than the definition it carries) answers 413 first; the
//     definition's own check stays as the safeguard should either limit change.
package templates
