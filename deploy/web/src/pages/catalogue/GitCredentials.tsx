// Git credentials: what template repositories are cloned with.
import { gitCredentialsKey, gitCredentialsQuery } from "../../api/queries/lookups";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, call } from "../../api/client";
import { ProblemBox, when } from "../common";
import { Adder, given, str } from "../ResourceForm";
import { ResourceTable, RowActions } from "../ResourceTable";

export function GitCredentials({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const creds = useQuery(gitCredentialsQuery());
  const refresh = () => void qc.invalidateQueries({ queryKey: gitCredentialsKey });
  return (
    <section aria-label="Git credentials">
      {admin && (
        <Adder
          label="Add a git credential"
          fields={[
            { name: "name", label: "Name", required: true },
            {
              name: "url_prefix",
              label: "URL prefix",
              required: true,
              placeholder: "https://git.example.org/infra/",
              hint: "https://… takes a token; ssh://… a key.",
            },
            { name: "username", label: "User name (HTTPS)" },
            { name: "token", label: "Token (HTTPS)", kind: "secret" },
            { name: "ssh_private_key", label: "SSH private key (SSH)", kind: "textarea" },
            { name: "ssh_host_key", label: "SSH host key (SSH)", kind: "textarea", hint: "authorized_keys lines of the git server" },
          ]}
          onDone={refresh}
          submit={(v) =>
            call(
              api.POST("/v1/git-credentials", {
                body: {
                  name: str(v, "name"),
                  url_prefix: str(v, "url_prefix"),
                  ...given(v, "username", "token", "ssh_private_key", "ssh_host_key"),
                },
              }),
            )
          }
        />
      )}
      <ProblemBox error={creds.error} />
      <ResourceTable
        items={creds.data?.items}
        rowKey={(c) => c.id}
        rowData={(c) => ({ "data-credential": c.name })}
        columns={[
          { header: "Name", cell: (c) => c.name },
          { header: "URL prefix", cell: (c) => <code>{c.url_prefix}</code> },
          { header: "Kind", cell: (c) => `${c.kind}${c.username ? ` as ${c.username}` : ""}` },
          { header: "Host keys", cell: (c) => c.ssh_host_key_fingerprints.map((f) => <code key={f}>{f} </code>) },
          { header: "Added", cell: (c) => when(c.created_at) },
        ]}
        actions={
          admin &&
          ((c) => (
            <RowActions
              name={c.name}
              remove={{ run: () => call(api.DELETE("/v1/git-credentials/{id}", { params: { path: { id: c.id } } })), onDone: refresh }}
            />
          ))
        }
      />
    </section>
  );
}
