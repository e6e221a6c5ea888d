// ISOs: an admin builds an installer image (served from here) from the build form and watches
// its stages turn green, its log and summary, then finds it built in the list. Then day 2:
//   - the build form lists only the chosen Proxmox server's nodes (08-catalogue registered a
//     second server);
//   - the ISO's detail lists its runs (build history) and downloads its log through a link;
//   - deleting it while a stack uses it is refused, the refusal links the stack; once no stack
//     uses it, the delete goes through and it leaves the list.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { expect, test } from "./fixtures";

test("build an ISO, then delete it", async ({ lab, api, axe, signIn }) => {
  const image = Buffer.from("an installer for the console's journey");
  const imageServer = createServer((_, res) => res.end(image));
  await new Promise<void>((r) => imageServer.listen(0, "127.0.0.1", r));
  const ai = await signIn(lab.admin, "#/isos");
  try {
    await api(lab.admin, "POST", "/v1/iso-templates", {
      name: "installer-e2e",
      kind: "iso",
      spec: {
        source: {
          url: `http://127.0.0.1:${(imageServer.address() as AddressInfo).port}/installer-e2e.iso`,
          checksum: createHash("sha256").update(image).digest("hex"),
        },
        storage: "local",
      },
    });
    await expect(ai.getByRole("heading", { name: "ISOs" })).toBeVisible();
    await ai.getByRole("link", { name: "Build an ISO" }).click();
    await ai.getByLabel("ISO template *").selectOption({ label: "installer-e2e (iso, latest v1)" });
    await ai.getByLabel("Proxmox server *").selectOption({ index: 1 });
    await ai.getByLabel("Node *").selectOption("pve1");
    await ai.getByLabel("Name", { exact: true }).fill("installer-e2e on pve1");
    await axe(ai, "iso-build-form");
    await ai.getByRole("button", { name: "Build", exact: true }).click();
    await expect(ai.getByRole("heading", { name: /installer-e2e on pve1/ })).toBeVisible();
    for (const stage of ["preflight", "image"])
      await expect(ai.locator(`.card[data-card="${stage}"][data-state="succeeded"]`)).toBeVisible({ timeout: 90_000 });
    await expect(ai.getByTestId("iso-summary").getByText(/done: preflight: every check passed, image: downloaded/)).toBeVisible();
    await expect(ai.locator('[data-testid="log-lines"] .line').first()).toBeVisible();
    await expect(ai.getByRole("heading", { name: /installer-e2e on pve1 built/ })).toBeVisible();
    await axe(ai, "iso-detail");
    await ai.getByRole("link", { name: "ISOs" }).click();
    await expect(ai.locator('tr[data-iso="installer-e2e on pve1"]').getByText("built", { exact: true })).toBeVisible();
    await axe(ai, "isos-list");
  } finally {
    imageServer.close();
  }

  const isoName = "installer-e2e on pve1";
  const iso = (await api(lab.admin, "GET", "/v1/isos?limit=200")).items.find((i: { name: string }) => i.name === isoName);
  expect(iso, `the ISO ${isoName} is listed`).toBeTruthy();

  // The build form: no node before a server is chosen, then only that server's.
  const servers = (await api(lab.admin, "GET", "/v1/proxmox-servers")).items;
  expect(servers.length, "two servers are registered").toBeGreaterThanOrEqual(2);
  await ai.getByRole("link", { name: "Build an ISO" }).click();
  const nodeChoices = async () => (await ai.getByLabel("Node *").locator("option").allTextContents()).filter((t) => t !== "Choose…");
  expect(await nodeChoices(), "no node is offered before a server is chosen").toEqual([]);
  for (const s of servers) {
    await ai.getByLabel("Proxmox server *").selectOption(s.id);
    const got = await nodeChoices();
    const want = s.nodes.map((n: { name: string }) => n.name);
    expect(got.length, `the nodes of ${s.name} only: got ${got}, want ${want}`).toBe(want.length);
    for (const n of want)
      expect(
        got.some((g) => g.startsWith(n)),
        `${n} of ${s.name} is offered: ${got}`,
      ).toBe(true);
  }
  await ai.getByRole("button", { name: "Cancel" }).click();

  // The detail: its runs, and its log downloaded through a link (an iso_logs stream token).
  await ai.locator(`tr[data-iso="${isoName}"]`).getByRole("link", { name: isoName }).click();
  const runs = ai.getByTestId("iso-runs");
  await expect(runs.locator("tr[data-run]"), "one run in the ISO's history").toHaveCount(1);
  await expect(runs.locator("tr[data-run]").first().getByText("build", { exact: true })).toBeVisible();
  const [dl] = await Promise.all([
    ai.waitForEvent("download"),
    ai.getByRole("toolbar", { name: "Log" }).getByRole("button", { name: "Download" }).click(),
  ]);
  const text = readFileSync((await dl.path())!, "utf8");
  expect(text.split("\n").filter(Boolean).length, "the ISO's log is downloaded").toBeGreaterThan(0);
  expect(text, "a log, not a problem").not.toContain('"type":"urn:horizon');

  // A stack uses the ISO: a template whose db machine boots from an ISO, and a member's draft
  // that picks this one.
  const tmpl = (await api(lab.member, "GET", "/v1/templates")).items[0];
  const version = await api(lab.member, "GET", `/v1/templates/${tmpl.id}/versions/${tmpl.latest_version}`);
  const def = structuredClone(version.definition);
  def.phases[0].jobs[0].iso = true;
  const isoTmpl = await api(lab.admin, "POST", "/v1/templates", { name: "sandbox-vm-iso", definition: def });
  const me = await api(lab.member, "GET", "/v1/me");
  const environment = (await api(lab.member, "GET", "/v1/environments")).items[0];
  const job = def.phases[0].jobs[0].name;
  const jobs = { [job]: { executions: [{ proxmox_server_id: iso.proxmox_server_id, node: iso.node, iso_id: iso.id }] } };
  const stack = await api(lab.member, "POST", "/v1/stacks", {
    team_id: me.teams[0],
    name: "boots-installer",
    environment_id: environment.id,
    template_id: isoTmpl.id,
    template_version: 1,
    jobs,
  });

  // Delete while used: refused, the refusal links the stack.
  const del = ai.getByRole("group", { name: "ISO actions" });
  const deleteIt = async () => {
    await del.getByRole("button", { name: `Delete ${isoName}` }).click();
    await del.getByRole("button", { name: `Yes, delete ${isoName}` }).click();
  };
  await deleteIt();
  const refusal = del.getByRole("alert");
  await expect(refusal.getByText(/is used by stack boots-installer/)).toBeVisible();
  const link = refusal.getByRole("link", { name: "boots-installer" });
  await expect(link, "the refusal links the stack").toHaveAttribute("href", `#/stacks/${stack.id}`);
  await axe(ai, "iso-delete-refused");
  expect((await api(lab.admin, "GET", `/v1/isos/${iso.id}`)).state, "a refused delete leaves the ISO built").toBe("built");
  await link.click();
  await expect(ai.getByRole("heading", { name: /boots-installer/ })).toBeVisible();

  // Once the stack is removed, the delete goes through and the ISO leaves the list.
  await api(lab.member, "DELETE", `/v1/stacks/${stack.id}`);
  await ai.goBack();
  await expect(ai.getByRole("heading", { name: new RegExp(isoName) })).toBeVisible();
  await deleteIt();
  await expect(ai.getByRole("heading", { name: new RegExp(`${isoName} (removing|removed)`) })).toBeVisible();
  await expect(ai.getByRole("heading", { name: new RegExp(`${isoName} removed`) })).toBeVisible({ timeout: 30_000 });
  await expect(ai.getByTestId("iso-runs").locator("tr[data-run]").nth(1)).toBeVisible();
  await ai.getByRole("link", { name: "ISOs" }).click();
  await expect(ai.getByRole("heading", { name: "ISOs" })).toBeVisible();
  await expect(ai.getByText("No ISO matches.")).toBeVisible();
  await expect(ai.locator(`tr[data-iso="${isoName}"]`), "the deleted ISO is gone from the list").toHaveCount(0);
});
