// The resource screens' one table: a header row of column headers (and Actions only when there
// are actions), rows named by their data-* attributes, and a row's edit form in a row below it
// that closes on Cancel and once saved.
import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { ResourceTable, RowActions } from "./ResourceTable";

afterEach(cleanup);

type Env = { id: string; name: string; version: number };
const envs: Env[] = [
  { id: "1", name: "lab", version: 3 },
  { id: "2", name: "prod", version: 1 },
];
// A table of envs by name, each row named by data-environment.
const named = {
  items: envs,
  rowKey: (e: Env) => e.id,
  rowData: (e: Env) => ({ "data-environment": e.name }),
  columns: [{ header: "Name", cell: (e: Env) => e.name }],
};

describe("ResourceTable", () => {
  it("draws the header, the rows' data attributes and no Actions column without actions", () => {
    const { container } = render(
      <ResourceTable
        items={envs}
        rowKey={(e) => e.id}
        rowData={(e) => ({ "data-environment": e.name })}
        columns={[
          { header: "Name", cell: (e) => e.name },
          { header: "Version", cell: (e) => e.version, data: (e) => ({ "data-version": String(e.version) }) },
        ]}
      />,
    );
    const heads = [...container.querySelectorAll("thead th")];
    expect(heads.map((h) => [h.textContent, h.getAttribute("scope")])).toEqual([
      ["Name", "col"],
      ["Version", "col"],
    ]);
    expect([...container.querySelectorAll("tbody tr")].map((r) => r.getAttribute("data-environment"))).toEqual(["lab", "prod"]);
    expect(container.querySelector('tr[data-environment="lab"] td[data-version="3"]')?.textContent).toBe("3");
  });

  it("shows empty instead of a table for an empty list, and a table while it is loading", () => {
    const props = { rowKey: (e: Env) => e.id, columns: [{ header: "Name", cell: (e: Env) => e.name }], empty: <p>None yet.</p> };
    const { container, rerender } = render(<ResourceTable items={undefined} {...props} />);
    expect(container.querySelector("table")).not.toBeNull();
    rerender(<ResourceTable items={[]} {...props} />);
    expect(container.querySelector("table")).toBeNull();
    screen.getByText("None yet.");
  });

  it("opens a row's edit form below it and closes it once saved", async () => {
    const saved: string[] = [];
    const { container } = render(
      <ResourceTable
        {...named}
        actions={(e, p) => <RowActions name={e.name} panel={p} edit="Edit" />}
        edit={(e) => ({
          title: `Edit ${e.name}`,
          fields: [{ name: "name", label: "Name", required: true }],
          initial: { name: e.name },
          onDone: () => saved.push(`done ${e.name}`),
          submit: async (v) => saved.push(`${e.id}=${v.name}`),
        })}
      />,
    );
    expect(container.querySelectorAll("thead th")).toHaveLength(2);
    const edit = screen.getByRole("button", { name: "Edit lab" });
    expect(edit.getAttribute("aria-expanded")).toBe("false");
    fireEvent.click(edit);
    expect(edit.getAttribute("aria-expanded")).toBe("true");
    // The form is in its own row, right below lab's, spanning both columns.
    const below = container.querySelector('tr[data-environment="lab"] + tr.expanded');
    expect(below?.querySelector("td")?.getAttribute("colspan")).toBe("2");
    const form = below?.querySelector("form.resource-form") as HTMLFormElement;
    fireEvent.change(within(form).getByLabelText("Name *"), { target: { value: "lab2" } });
    fireEvent.click(within(form).getByRole("button", { name: "Save" }));
    await waitFor(() => expect(container.querySelector("form.resource-form")).toBeNull());
    expect(saved).toEqual(["1=lab2", "done lab"]);
  });

  it("asks once before a remove, and a typed-name confirmation opens the row's delete panel", async () => {
    const removed: string[] = [];
    const { container } = render(
      <ResourceTable
        {...named}
        actions={(e, p) =>
          e.name === "lab" ? (
            <RowActions
              name={e.name}
              remove={{ verb: "Revoke", run: async () => removed.push(e.id), onDone: () => removed.push("done") }}
            />
          ) : (
            <RowActions name={e.name} panel={p} remove="confirm" />
          )
        }
        panel={(e, open) => <p>{`${open} ${e.name}`}</p>}
      />,
    );
    fireEvent.click(screen.getByRole("button", { name: "Revoke lab" }));
    expect(removed).toEqual([]);
    fireEvent.click(screen.getByRole("button", { name: "Yes, revoke lab" }));
    await waitFor(() => expect(removed).toEqual(["1", "done"]));
    fireEvent.click(screen.getByRole("button", { name: "Delete prod" }));
    expect(container.querySelector('tr[data-environment="prod"] + tr.expanded')?.textContent).toBe("delete prod");
    expect(screen.getByRole("group", { name: "prod actions" })).toBeTruthy();
  });
});
