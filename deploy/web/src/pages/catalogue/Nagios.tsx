// Nagios servers: registered and changed after the API's checks of both their CGIs and SSH side.
import { nagiosServersKey, nagiosServersQuery } from "../../api/queries/lookups";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, call, type Schemas } from "../../api/client";
import { ifMatch, ProblemBox, when } from "../common";
import { Adder, changed, given, str, type FieldSpec, type Values } from "../ResourceForm";
import { ResourceTable, RowActions } from "../ResourceTable";

const nagiosFields = (editing: boolean): FieldSpec[] => [
  { name: "name", label: "Name", required: true },
  { name: "url", label: "CGI URL", required: true, placeholder: "https://nagios.example.org/cgi-bin/nagios4" },
  { name: "username", label: "CGI user", required: true },
  { name: "password", label: "CGI password", kind: "secret", required: !editing, hint: editing ? "Leave blank to keep it." : undefined },
  {
    name: "ssh_address",
    label: "SSH address",
    required: !editing,
    placeholder: "nagios.example.org:22",
    hint: "Horizon writes its object files over SSH.",
  },
  { name: "ssh_user", label: "SSH user" },
  {
    name: "ssh_private_key",
    label: "SSH private key",
    kind: "textarea",
    required: !editing,
    hint: editing ? "Leave blank to keep it." : "Unencrypted, OpenSSH or PEM; its public half in the user's authorized_keys.",
  },
  {
    name: "ssh_host_key_fingerprint",
    label: "SSH host key (SHA256)",
    required: !editing,
    placeholder: "SHA256:…",
    hint: "As ssh-keygen -lf prints it for the server's host key.",
  },
  { name: "config_dir", label: "Config directory", hint: "Horizon's own, inside a cfg_dir of nagios.cfg." },
  { name: "verify_command", label: "Verify command" },
  { name: "reload_command", label: "Reload command", hint: "Its program must exist; Nagios is not reloaded to check it." },
];

/** Debian nagios4's defaults, shown in the registration form. */
const nagiosDefaults: Values = {
  ssh_user: "root",
  config_dir: "/etc/nagios4/conf.d/horizon",
  verify_command: "/usr/sbin/nagios4 -v /etc/nagios4/nagios.cfg",
  reload_command: "systemctl reload nagios4",
};

const nagiosKeys = [
  "name",
  "url",
  "username",
  "password",
  "ssh_address",
  "ssh_user",
  "ssh_private_key",
  "ssh_host_key_fingerprint",
  "config_dir",
  "verify_command",
  "reload_command",
];

/** nagiosValues is a server's form values: its settings, its secrets blank (kept unless typed). */
function nagiosValues(n: Schemas["NagiosServer"]): Values {
  return {
    name: n.name,
    url: n.url,
    username: n.username,
    password: "",
    ssh_address: n.ssh_address,
    ssh_user: n.ssh_user,
    ssh_private_key: "",
    ssh_host_key_fingerprint: n.ssh_host_key_fingerprint,
    config_dir: n.config_dir,
    verify_command: n.verify_command,
    reload_command: n.reload_command,
  };
}

export function Nagios({ admin }: { admin: boolean }) {
  const qc = useQueryClient();
  const nagios = useQuery(nagiosServersQuery());
  const refresh = () => void qc.invalidateQueries({ queryKey: nagiosServersKey });
  return (
    <section aria-label="Nagios servers">
      {admin && (
        <Adder
          label="Register a Nagios server"
          submitLabel="Check and register"
          fields={nagiosFields(false)}
          initial={nagiosDefaults}
          onDone={refresh}
          submit={(v) =>
            call(
              api.POST("/v1/nagios-servers", {
                body: {
                  name: str(v, "name"),
                  url: str(v, "url"),
                  username: str(v, "username"),
                  password: str(v, "password"),
                  ssh_address: str(v, "ssh_address"),
                  ssh_private_key: str(v, "ssh_private_key"),
                  ssh_host_key_fingerprint: str(v, "ssh_host_key_fingerprint"),
                  ...given(v, "ssh_user", "config_dir", "verify_command", "reload_command"),
                },
              }),
            )
          }
        />
      )}
      <ProblemBox error={nagios.error} />
      <ResourceTable
        items={nagios.data?.items}
        empty={<p className="empty">No Nagios server is registered.</p>}
        rowKey={(n) => n.id}
        rowData={(n) => ({ "data-nagios": n.name })}
        columns={[
          { header: "Name", cell: (n) => n.name },
          { header: "URL", cell: (n) => <code>{n.url}</code> },
          { header: "User", cell: (n) => n.username },
          {
            header: "SSH",
            cell: (n) =>
              n.ssh_address ? (
                <>
                  {n.ssh_user}@{n.ssh_address}
                </>
              ) : (
                <span className="field-errors">no SSH access: nothing can be published</span>
              ),
          },
          { header: "Changed", cell: (n) => when(n.updated_at) },
        ]}
        actions={
          admin &&
          ((n, p) => (
            <RowActions
              name={n.name}
              panel={p}
              edit="Edit"
              remove={{ run: () => call(api.DELETE("/v1/nagios-servers/{id}", { params: { path: { id: n.id } } })), onDone: refresh }}
            />
          ))
        }
        edit={(n) => {
          const initial = nagiosValues(n);
          return {
            title: `Edit ${n.name}`,
            submitLabel: "Check and save",
            fields: nagiosFields(true),
            initial,
            onDone: refresh,
            submit: (v) =>
              call(
                api.PATCH("/v1/nagios-servers/{id}", {
                  params: { path: { id: n.id }, header: ifMatch(n) },
                  body: changed(v, initial, ...nagiosKeys),
                }),
              ),
          };
        }}
      />
    </section>
  );
}
