// How the console numbers machines and action instances: by the number the API gives them,
// kept for their life and the same on every screen.
//
// A machine (an execution of a job) is "<job> #<index>", its index as the API has it: 0 for a
// job's first machine. That is the number in its VM's name and hostname ("shop-app-1" is
// "app #1"), in the API's paths (/jobs/app/executions/1/…), in the log's `execution` filter and
// in its Terraform workspace. An index is never reused while the machine lives, so removing
// "app #0" leaves "app #1" called "app #1" in the form, the plan, the pipeline, the log and the
// outputs. A new machine is shown with the index the API will give it.
//
// An action instance is "<action> #<number>", its number as the API has it (from 1), which is
// also the number in its horizon_name and workspace; an undo step carries that number as its
// execution, so its pipeline card and log lines say the same.

/** machineLabel is how a machine (or an instance, for an action's step) is called: "app #1". */
export function machineLabel(job: string, n: number | null | undefined): string {
  return n === null || n === undefined ? job : `${job} #${n}`;
}
