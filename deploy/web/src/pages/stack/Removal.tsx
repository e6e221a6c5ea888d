// What a force-removal leaves behind (the abandon manifest): shown before it is confirmed,
// downloaded as JSON, and offered again on the removed stack's page to admins.
import { abandonManifestQuery } from "../../api/queries/stacks";
import { useQuery } from "@tanstack/react-query";
import { manifestSummary, type Manifest } from "../../plan/plan";
import { machineLabel } from "../../numbering";
import { Head } from "../common";

/** ManifestView lists what a force-remove leaves behind. */
export function ManifestView({ m }: { m: Manifest }) {
  return (
    <div className="manifest">
      <table>
        <caption>VMs left running</caption>
        <Head cols={["VM", "Name", "Node", "Pool", "Execution"]} />
        <tbody>
          {m.vms.length === 0 && (
            <tr>
              <td colSpan={5} className="muted">
                none
              </td>
            </tr>
          )}
          {m.vms.map((v) => (
            <tr key={`${v.proxmox_server_id}/${v.vm_id}`} data-vm={v.vm_id}>
              <td>{v.vm_id}</td>
              <td>{v.name}</td>
              <td>{v.node}</td>
              <td>{v.pool}</td>
              <td>{machineLabel(v.job, v.execution)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Addresses freed although a VM may still use them</h3>
      {m.addresses.length ? (
        <ul>
          {m.addresses.map((a) => (
            <li key={a.id}>
              {a.name} ({a.ip})
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted">none</p>
      )}
      <h3>Terraform workspaces left</h3>
      {m.workspaces.length ? (
        <ul>
          {m.workspaces.map((w) => (
            <li key={w}>
              <code>{w}</code>
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted">none</p>
      )}
      {m.nagios_hosts.length > 0 && (
        <>
          <h3>Nagios hosts left</h3>
          <ul>
            {m.nagios_hosts.map((h) => (
              <li key={h}>{h}</li>
            ))}
          </ul>
        </>
      )}
      {m.action_instances.length > 0 && (
        <>
          <h3>Action instances left (not undone)</h3>
          <ul>
            {m.action_instances.map((a) => (
              <li key={a.id}>
                {a.action} #{a.number} (v{a.template_version}, workspace <code>{a.workspace}</code>)
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}

/** downloadManifest saves a manifest as JSON through a link: nothing leaves the browser. */
export function downloadManifest(m: Manifest) {
  const url = URL.createObjectURL(new Blob([JSON.stringify(m, null, 2)], { type: "application/json" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = `abandon-manifest-${m.stack_name}.json`;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** AbandonManifestLink downloads what a force-remove recorded (admins; 404 when none was). */
export function AbandonManifestLink({ id }: { id: string }) {
  const m = useQuery(abandonManifestQuery(id));
  if (!m.data) return null;
  return (
    <p>
      It was force-removed: {manifestSummary(m.data)} were left behind.{" "}
      <button type="button" className="link" onClick={() => downloadManifest(m.data!)}>
        Download the abandon manifest
      </button>
    </p>
  );
}
