// Startup: every VM of every stack the caller may see, in the order they boot when a host
// restarts (startup order ascending; machines without an order last, as the API sorts them),
// with its stack, environment, job, host (Proxmox node) and the state Proxmox reports now.
// Stack events refresh it (the shell invalidates ["startup"]).
import { startupQuery } from "../api/queries/stacks";
import { useQuery } from "@tanstack/react-query";
import { href } from "../router";
import { Head, ProblemBox, StateBadge } from "./common";
import { nameOf, useEnvironments } from "./lookups";
import { machineLabel } from "../numbering";

export function Startup() {
  const machines = useQuery(startupQuery());
  const envs = useEnvironments();
  const rows = machines.data?.items ?? [];
  return (
    <>
      <div className="page-head">
        <h1>Startup order</h1>
      </div>
      <p className="muted">The order the machines boot in when their host restarts; machines without an order start last.</p>
      <ProblemBox error={machines.error} />
      {machines.isLoading ? (
        <p>Loading…</p>
      ) : rows.length === 0 ? (
        <p className="empty">No machine is deployed.</p>
      ) : (
        <table className="startup">
          <Head cols={["Order", "Stack", "Environment", "Job", "Host", "VM", "State"]} />
          <tbody>
            {rows.map((m) => (
              <tr key={`${m.stack_id}/${m.job}/${m.execution}`} data-machine={`${m.stack} ${machineLabel(m.job, m.execution)}`}>
                <td>{m.startup_order ?? <span className="muted">none</span>}</td>
                <td>
                  <a href={href(`/stacks/${m.stack_id}`)}>{m.stack}</a>
                </td>
                <td>{nameOf(envs.data, m.environment_id)}</td>
                <td>{machineLabel(m.job, m.execution)}</td>
                <td>{m.node}</td>
                <td>{m.vm_id}</td>
                <td>
                  <StateBadge state={m.state} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
