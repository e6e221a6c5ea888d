// The renderer in a DOM: every parameter type is drawn with a label, single options are
// preselected, add/remove follow min/max, and server errors appear on their field.
import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { useState } from "react";
import { afterEach, describe, expect, it } from "vitest";
import type { TemplateForm } from "../api/client";
import { FormRenderer } from "./FormRenderer";
import { fieldErrors, initialValues, type FormValues, type Options } from "./model";

afterEach(cleanup);

const form: TemplateForm = {
  template: "t",
  phases: [
    {
      name: "database",
      jobs: [
        {
          name: "db",
          machine: true,
          executions: { multiple: false, min: 1, max: 1 },
          attachments: [
            { kind: "address", required: true },
            { kind: "ssh_key", required: true },
            { kind: "node", required: true },
            { kind: "pool", required: false },
            { kind: "nagios_host_group", required: false },
            { kind: "node_exporter", required: false },
          ],
          depends_on: [],
          parameters: { type: "object", properties: { cores: { type: "integer", minimum: 1, maximum: 8, default: 2, title: "Cores" } } },
        },
      ],
    },
    {
      name: "application",
      jobs: [
        {
          name: "app",
          machine: true,
          executions: { multiple: true, min: 1, max: 2 },
          attachments: [],
          depends_on: ["db"],
          parameters: {
            type: "object",
            properties: {
              size: { type: "string", enum: ["s", "m"] },
              edition: { type: "string", enum: ["community"] },
              debug: { type: "boolean", title: "Debug" },
              ratio: { type: "number" },
              secret: { type: "string", "x-horizon-secret": true, "x-horizon-generate": true, title: "Password" },
            },
            "x-horizon-order": ["size", "edition", "debug", "ratio", "secret"],
          },
        },
      ],
    },
  ],
};
const opts: Options = {
  addresses: [
    { value: "a1", label: "vm-1 (10.0.0.1)" },
    { value: "a2", label: "vm-2 (10.0.0.2)" },
  ],
  sshKeys: [{ value: "k1", label: "laptop" }],
  servers: [{ value: "s1", label: "sandbox", nodes: ["pve1", "pve2"], pools: ["dev"] }],
  isos: [],
  nagios: false,
  hostgroups: [],
};

function Harness({
  errors = [],
  onValues,
  options = opts,
}: {
  errors?: { field: string; message: string }[];
  onValues?: (v: FormValues) => void;
  options?: Options;
}) {
  const [v, setV] = useState(() => initialValues(form, options));
  onValues?.(v);
  return <FormRenderer form={form} values={v} onChange={setV} options={options} errors={fieldErrors(errors)} />;
}

describe("FormRenderer", () => {
  it("draws one section per phase and one block per job, every input labelled", () => {
    const { container } = render(<Harness />);
    expect(screen.getByRole("region", { name: "Phase 1: database" })).toBeTruthy();
    expect(screen.getByRole("region", { name: "Phase 2: application" })).toBeTruthy();
    for (const el of container.querySelectorAll("input, select")) {
      const id = el.getAttribute("id");
      expect(id && container.querySelector(`label[for="${CSS.escape(id)}"]`), `input ${el.outerHTML} has a label`).toBeTruthy();
    }
  });

  it("draws each parameter type and preselects single options", () => {
    render(<Harness />);
    const cores = screen.getByLabelText("Cores") as HTMLInputElement;
    expect(cores.type).toBe("number");
    expect([cores.min, cores.max, cores.value]).toEqual(["1", "8", "2"]);
    expect((screen.getByLabelText("size") as HTMLSelectElement).value).toBe("");
    const edition = screen.getByLabelText("edition") as HTMLSelectElement;
    expect(edition.value).toBe("community");
    expect(edition.options).toHaveLength(1);
    expect((screen.getByLabelText("Debug") as HTMLInputElement).type).toBe("checkbox");
    expect((screen.getByLabelText("ratio") as HTMLInputElement).step).toBe("any");
    expect((screen.getByLabelText("Password") as HTMLInputElement).type).toBe("password");
    expect((screen.getByLabelText("SSH key *") as HTMLSelectElement).value).toBe("k1");
    expect((screen.getByLabelText("Address *") as HTMLSelectElement).value).toBe("");
    expect((screen.getByLabelText("Proxmox server *") as HTMLSelectElement).value).toBe("s1");
    expect((screen.getByLabelText("Node *") as HTMLSelectElement).value).toBe("");
    expect((screen.getByLabelText("Resource pool") as HTMLSelectElement).value).toBe("dev");
    expect(screen.queryByLabelText("Nagios host group")).toBeNull(); // no Nagios server
    expect(screen.getByLabelText("Node Exporter")).toBeTruthy();
  });

  it("suggests the Nagios server's host groups and takes any other name", () => {
    let last: FormValues | undefined;
    render(<Harness options={{ ...opts, nagios: true, hostgroups: ["linux-servers", "web"] }} onValues={(v) => (last = v)} />);
    const group = screen.getAllByLabelText("Nagios host group")[0] as HTMLInputElement;
    expect([...(group.list?.options ?? [])].map((o) => o.value)).toEqual(["linux-servers", "web"]);
    fireEvent.change(group, { target: { value: "empty-group" } }); // an empty group is not listed by Nagios
    expect(Object.values(last!.jobs).some((j) => j.some((e) => e.nagios_hostgroup === "empty-group"))).toBe(true);
  });

  it("generates a secret on request", () => {
    let last: FormValues | undefined;
    render(<Harness onValues={(v) => (last = v)} />);
    fireEvent.click(screen.getByRole("button", { name: "Generate Password" }));
    expect(String(last!.jobs.app[0].parameters.secret)).toMatch(/^[A-Za-z0-9_-]{20,}$/);
  });

  it("adds and removes machines within min and max", () => {
    render(<Harness />);
    expect(screen.queryByRole("button", { name: /Remove app/ })).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "Add machine to app" }));
    expect(screen.getAllByLabelText("size")).toHaveLength(2);
    expect(screen.queryByRole("button", { name: "Add machine to app" })).toBeNull(); // max 2
    fireEvent.click(screen.getByRole("button", { name: "Remove app #1" }));
    expect(screen.getAllByLabelText("size")).toHaveLength(1);
  });

  it("shows the server's errors on the field they name", () => {
    render(
      <Harness
        errors={[
          { field: "jobs.db.executions[0].parameters.cores", message: "must be at most 8" },
          { field: "jobs.db.executions[0].address_id", message: "is required" },
          { field: "jobs.app.executions", message: "has 3 executions; the template allows at most 2" },
        ]}
      />,
    );
    const cores = screen.getByLabelText("Cores");
    expect(cores.getAttribute("aria-invalid")).toBe("true");
    expect(document.getElementById(cores.getAttribute("aria-describedby")!)!.textContent).toBe("must be at most 8");
    const addr = screen.getByLabelText("Address *");
    expect(document.getElementById(addr.getAttribute("aria-describedby")!)!.textContent).toBe("is required");
    const appBlock = screen.getByRole("region", { name: "Phase 2: application" });
    expect(within(appBlock).getByRole("alert").textContent).toContain("at most 2");
    expect(screen.getByLabelText("size").getAttribute("aria-invalid")).toBe("false");
  });
});
