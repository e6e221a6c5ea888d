// Git credentials: what template repositories are cloned with.
import { gitCredentialsKey, gitCredentialsQuery } from "../../api/queries/lookups";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, call } from "../../api/client";
import { Head, ProblemBox, when } from "../common";
import { Adder, Delete, given, ResourceForm, str } from "../ResourceForm";

export function GitCredentials({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const creds = useQuery(gitCredentialsQuery());
  const refresh = () => void qc.invalidateQueries({ queryKey: gitCredentialsKey });
  return (
    <section aria-label="Git credentials">
      {admin && (
        <Adder label="Add a git credential">
          {(close) => (
            <ResourceForm
              title="Add a git credential"
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
              onCancel={close}
              onDone={() => {
                close();
                refresh();
              }}
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
        </Adder>
      )}
      <ProblemBox error={creds.error} />
      <table>
        <Head cols={["Name", "URL prefix", "Kind", "Host keys", "Added"]} actions={admin} />
        <tbody>
          {creds.data?.items.map((c) => (
            <tr key={c.id} data-credential={c.name}>
              <td>{c.name}</td>
              <td>
                <code>{c.url_prefix}</code>
              </td>
              <td>
                {c.kind}
                {c.username ? ` as ${c.username}` : ""}
              </td>
              <td>
                {c.ssh_host_key_fingerprints.map((f) => (
                  <code key={f}>{f} </code>
                ))}
              </td>
              <td>{when(c.created_at)}</td>
              {admin && (
                <td>
                  <Delete
                    what={c.name}
                    run={() => call(api.DELETE("/v1/git-credentials/{id}", { params: { path: { id: c.id } } }))}
                    onDone={refresh}
                  />
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
