// A form whose lists are empty says where to fill them: the first stack of a new installation
// must not be a dead end (no SSH key, no ISO yet).
import { cleanup, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import type { TemplateForm } from "../api/client";
import { EmptyIsos } from "../pages/Isos";
import { FormRenderer } from "./FormRenderer";
import { fieldErrors, initialValues, type Options } from "./model";

afterEach(cleanup);

const form: TemplateForm = {
  template: "t",
  phases: [
    {
      name: "main",
      jobs: [
        {
          name: "vm",
          machine: true,
          executions: { multiple: false, min: 1, max: 1 },
          depends_on: [],
          attachments: [
            { kind: "ssh_key", required: true },
            { kind: "node", required: true },
            { kind: "iso", required: true },
          ],
          parameters: { type: "object", properties: {} },
        },
      ],
    },
  ],
};
const base: Options = {
  addresses: [],
  sshKeys: [],
  servers: [{ value: "s1", label: "sandbox", nodes: ["pve1"], pools: [] }],
  isos: [],
  nagios: false,
  hostgroups: [],
};

function draw(options: Options) {
  return render(
    <FormRenderer form={form} values={initialValues(form, options)} onChange={() => {}} options={options} errors={fieldErrors([])} />,
  );
}

describe("empty lists", () => {
  it("link to adding an SSH key and building an ISO", () => {
    draw(base);
    expect(screen.getByRole("link", { name: "Add an SSH key" }).getAttribute("href")).toBe("#/catalogue/ssh-keys");
    expect(screen.getByRole("link", { name: "Build one on the ISOs page" }).getAttribute("href")).toBe("#/isos");
  });
  it("say nothing once there is something to choose, and preselect a single server and node", () => {
    const { container } = draw({ ...base, sshKeys: [{ value: "k1", label: "demo" }], isos: [{ value: "i1", label: "debian" }] });
    expect(screen.queryByRole("link", { name: "Add an SSH key" })).toBeNull();
    expect(screen.queryByRole("link", { name: "Build one on the ISOs page" })).toBeNull();
    const selects = [...container.querySelectorAll("select")].map((s) => s.value);
    expect(selects).toEqual(["k1", "s1", "pve1", "i1"]);
  });
});

describe("an empty ISO list", () => {
  it("says how to register an ISO template when there is none", () => {
    const { container } = render(<EmptyIsos filtered={false} templates={0} />);
    expect(container.textContent).toContain("POST /v1/iso-templates");
    cleanup();
    expect(render(<EmptyIsos filtered={true} templates={0} />).container.textContent).toBe("No ISO matches.");
    cleanup();
    expect(render(<EmptyIsos filtered={false} templates={2} />).container.textContent).toBe("No ISO matches.");
  });
});
