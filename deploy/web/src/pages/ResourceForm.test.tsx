// The catalogue's and people's one form: the API's problems land on the field they name (also
// on a field's sub-fields, e.g. nodes[0].ssh_address under nodes), the others above the
// buttons, and what was typed stays.
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { ApiError } from "../api/client";
import { changed, ResourceForm, type Values } from "./ResourceForm";

afterEach(cleanup);

const invalid = (errors: { field: string; message: string }[]) =>
  new ApiError(422, { type: "urn:horizon:problem:invalid", title: "Invalid request", status: 422, detail: "See errors.", errors });

describe("ResourceForm", () => {
  it("shows each problem on its field and keeps what was typed", async () => {
    let sent: Values | null = null;
    render(
      <ResourceForm
        title="Register"
        fields={[
          { name: "name", label: "Name", required: true },
          { name: "token_secret", label: "Token secret", kind: "secret", required: true },
          { name: "nodes", label: "Nodes", kind: "textarea" },
        ]}
        submit={async (v) => {
          sent = v;
          throw invalid([
            { field: "token_secret", message: "the cluster refused the API token" },
            { field: "nodes[1].ssh_address", message: "must be host:port" },
            { field: "tls_fingerprint", message: "is required unless ca_cert is given" },
          ]);
        }}
      />,
    );
    fireEvent.change(screen.getByLabelText("Name *"), { target: { value: "pve" } });
    fireEvent.change(screen.getByLabelText("Token secret *"), { target: { value: "wrong" } });
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await screen.findByText("the cluster refused the API token");
    expect(sent).toEqual({ name: "pve", token_secret: "wrong", nodes: "" });
    expect(screen.getByLabelText("Token secret *").getAttribute("aria-invalid")).toBe("true");
    expect(screen.getByLabelText("Name *").getAttribute("aria-invalid")).toBe("false");
    expect(screen.getByLabelText("Nodes").getAttribute("aria-invalid")).toBe("true");
    expect(screen.getByText("must be host:port")).toBeTruthy();
    // No field shows tls_fingerprint: it is listed with its name.
    expect(screen.getByText("tls_fingerprint").closest(".problem")).toBeTruthy();
    expect((screen.getByLabelText("Name *") as HTMLInputElement).value).toBe("pve");
  });

  it("says what went wrong when it is not a field's fault, and calls onDone on success", async () => {
    let done = 0;
    let fail = true;
    render(
      <ResourceForm
        title="Add"
        fields={[{ name: "name", label: "Name" }]}
        submit={async () => {
          if (fail)
            throw new ApiError(409, { type: "urn:horizon:problem:conflict", title: "Conflict", status: 409, detail: "name is taken" });
        }}
        onDone={() => done++}
      />,
    );
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await screen.findByText(/name is taken/);
    expect(done).toBe(0);
    fail = false;
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(done).toBe(1));
  });

  it("lists only the chosen server's nodes and clears a node the server change took away", () => {
    const nodes: Record<string, string[]> = { a: ["pve1", "pve2"], b: ["other1"] };
    render(
      <ResourceForm
        title="Build"
        fields={[
          {
            name: "server",
            label: "Server",
            kind: "select",
            required: true,
            options: [
              { value: "a", label: "A" },
              { value: "b", label: "B" },
            ],
          },
          {
            name: "node",
            label: "Node",
            kind: "select",
            required: true,
            options: (v) => (nodes[String(v.server)] ?? []).map((n) => ({ value: n, label: n })),
          },
        ]}
        submit={async () => undefined}
      />,
    );
    const node = screen.getByLabelText("Node *") as HTMLSelectElement;
    const names = () => [...node.options].map((o) => o.value).filter(Boolean);
    expect(names()).toEqual([]);
    fireEvent.change(screen.getByLabelText("Server *"), { target: { value: "a" } });
    expect(names()).toEqual(["pve1", "pve2"]);
    fireEvent.change(node, { target: { value: "pve2" } });
    expect(node.value).toBe("pve2");
    fireEvent.change(screen.getByLabelText("Server *"), { target: { value: "b" } });
    expect(names()).toEqual(["other1"]);
    expect(node.value).toBe("");
  });
});

describe("changed", () => {
  it("keeps only the fields that differ from the initial values; a blank secret is unchanged", () => {
    const initial: Values = {
      name: "nagios",
      url: "https://n/cgi-bin/nagios4",
      password: "",
      ssh_address: "",
      reload_command: "systemctl reload nagios4",
    };
    expect(changed({ ...initial }, initial, "name", "url", "password", "ssh_address", "reload_command")).toEqual({});
    expect(
      changed(
        { ...initial, ssh_address: " n:22 ", password: "pw", reload_command: "kill -HUP 1" },
        initial,
        "name",
        "url",
        "password",
        "ssh_address",
        "reload_command",
      ),
    ).toEqual({ ssh_address: "n:22", password: "pw", reload_command: "kill -HUP 1" });
    // Clearing a field sends it empty (the API then uses its default or names the field).
    expect(changed({ ...initial, reload_command: "" }, initial, "reload_command")).toEqual({ reload_command: "" });
  });
});
