// SSH keys: yours (admins see everyone's).
import { formOptionsKey, sshKeysKey, sshKeysQuery } from "../../api/queries/lookups";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, call } from "../../api/client";
import { ProblemBox, when } from "../common";
import { Adder, Delete, ResourceForm, str } from "../ResourceForm";

export function SSHKeys() {
  const qc = useQueryClient();
  const keys = useQuery(sshKeysQuery());
  // The stack form's choices hold the keys too: a key added from the form's link is there to
  // choose on coming back, not after the form's cached choices go stale.
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: sshKeysKey });
    void qc.invalidateQueries({ queryKey: formOptionsKey });
  };
  return (
    <section aria-label="SSH keys">
      <Adder label="Add an SSH key">
        {(close) => (
          <ResourceForm
            title="Add your SSH key"
            fields={[
              { name: "name", label: "Name", required: true },
              {
                name: "public_key",
                label: "Public key",
                kind: "textarea",
                required: true,
                hint: "One authorized_keys line, e.g. ssh-ed25519 AAAA… you@laptop",
              },
            ]}
            onCancel={close}
            onDone={() => {
              close();
              refresh();
            }}
            submit={(v) => call(api.POST("/v1/ssh-keys", { body: { name: str(v, "name"), public_key: str(v, "public_key") } }))}
          />
        )}
      </Adder>
      <ProblemBox error={keys.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Type</th>
            <th scope="col">Fingerprint</th>
            <th scope="col">Added</th>
            <th scope="col">
              <span className="muted">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {keys.data?.items.map((k) => (
            <tr key={k.id} data-key={k.name}>
              <td>{k.name}</td>
              <td>
                {k.type} {k.bits}
              </td>
              <td>
                <code>{k.fingerprint}</code>
              </td>
              <td>{when(k.created_at)}</td>
              <td>
                <Delete
                  what={k.name}
                  run={() => call(api.DELETE("/v1/ssh-keys/{id}", { params: { path: { id: k.id } } }))}
                  onDone={refresh}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
