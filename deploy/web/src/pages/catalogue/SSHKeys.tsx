// SSH keys: yours (admins see everyone's).
import { formOptionsKey, sshKeysKey, sshKeysQuery } from "../../api/queries/lookups";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, call } from "../../api/client";
import { ProblemBox, when } from "../common";
import { Adder, str } from "../ResourceForm";
import { ResourceTable, RowActions } from "../ResourceTable";

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
      <Adder
        label="Add an SSH key"
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
        onDone={refresh}
        submit={(v) => call(api.POST("/v1/ssh-keys", { body: { name: str(v, "name"), public_key: str(v, "public_key") } }))}
      />
      <ProblemBox error={keys.error} />
      <ResourceTable
        items={keys.data?.items}
        rowKey={(k) => k.id}
        rowData={(k) => ({ "data-key": k.name })}
        columns={[
          { header: "Name", cell: (k) => k.name },
          { header: "Type", cell: (k) => `${k.type} ${k.bits}` },
          { header: "Fingerprint", cell: (k) => <code>{k.fingerprint}</code> },
          { header: "Added", cell: (k) => when(k.created_at) },
        ]}
        actions={(k) => (
          <RowActions
            name={k.name}
            remove={{ run: () => call(api.DELETE("/v1/ssh-keys/{id}", { params: { path: { id: k.id } } })), onDone: refresh }}
          />
        )}
      />
    </section>
  );
}
