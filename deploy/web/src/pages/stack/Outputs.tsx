// A stack's outputs: every job's in one table, secret ones behind Copy and Reveal.
import { outputsQuery } from "../../api/queries/stacks";
import { useQuery } from "@tanstack/react-query";
import { api, call } from "../../api/client";
import { ProblemBox, Secret } from "../common";
import { machineLabel } from "../../numbering";

export function OutputsView({ id }: { id: string }) {
  const outputs = useQuery(outputsQuery(id));
  if (outputs.error) return <ProblemBox error={outputs.error} />;
  const jobs = Object.entries(outputs.data?.jobs ?? {});
  if (!jobs.length) return <p className="muted">No outputs yet.</p>;
  return <OutputsTable id={id} jobs={jobs} />;
}

type JobOutputs = [job: string, executions: { execution: number; outputs: unknown }[]];

/**
 * OutputsTable is every job's outputs in one table, a row group per job: the values are one
 * column however long a job's or an output's name is (#29 item 12; a table per job aligned
 * each job's values on its own names only).
 */
export function OutputsTable({ id, jobs }: { id: string; jobs: JobOutputs[] }) {
  return (
    <table className="outputs">
      {jobs.map(([job, execs]) => (
        <tbody key={job} aria-label={`Outputs of ${job}`}>
          <tr>
            <th scope="rowgroup" colSpan={2}>
              <h3>{job}</h3>
            </th>
          </tr>
          {execs.flatMap((e) =>
            Object.entries(e.outputs as Record<string, unknown>).map(([name, val]) => (
              <tr key={`${e.execution}/${name}`} data-output={`${job}#${e.execution}.${name}`}>
                <th scope="row">
                  {machineLabel(job, e.execution)} · {name}
                </th>
                <td>
                  {val && typeof val === "object" && (val as { secret?: boolean }).secret ? (
                    <Secret
                      name={name}
                      reveal={() =>
                        call(
                          api.POST("/v1/stacks/{id}/outputs/{job}/{n}/{name}/reveal", {
                            params: { path: { id, job, n: String(e.execution), name } },
                          }),
                        )
                      }
                    />
                  ) : (
                    <code>{typeof val === "string" ? val : JSON.stringify(val)}</code>
                  )}
                </td>
              </tr>
            )),
          )}
        </tbody>
      ))}
    </table>
  );
}
