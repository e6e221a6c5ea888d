// Day-2 journeys of the console's end-to-end scenario (run.mjs calls them with its page, its
// helpers and the lab's tokens), on the ISO that run.mjs built:
//   - the build form lists only the chosen Proxmox server's nodes;
//   - the ISO's detail lists its runs (build history) and downloads its log through a link;
//   - deleting it while a stack uses it is refused, the refusal links the stack; once no stack
//     uses it, the delete goes through and it leaves the list.
import { readFileSync } from "node:fs";

/**
 * isoDay2 runs the ISO journeys as the admin on page ai.
 * @param {object} o - { ai, apiAs, screen, check, log, ADMIN, MEMBER, isoName }
 */
export async function isoDay2({ ai, apiAs, screen, check, log, ADMIN, MEMBER, isoName }) {
  const iso = (await apiAs(ADMIN, "GET", "/v1/isos?limit=200")).items.find((i) => i.name === isoName);
  check(!!iso, `the ISO ${isoName} is listed`);

  // The build form: no node before a server is chosen, then only that server's.
  const servers = (await apiAs(ADMIN, "GET", "/v1/proxmox-servers")).items;
  check(servers.length >= 2, `two servers are registered (got ${servers.length})`);
  await ai.getByRole("link", { name: "Build an ISO" }).click();
  const nodeChoices = async () => (await ai.getByLabel("Node *").locator("option").allTextContents()).filter((t) => t !== "Choose…");
  check((await nodeChoices()).length === 0, "no node is offered before a server is chosen");
  for (const s of servers) {
    await ai.getByLabel("Proxmox server *").selectOption(s.id);
    const got = await nodeChoices();
    check(
      got.length === s.nodes.length && s.nodes.every((n) => got.some((g) => g.startsWith(n.name))),
      `the nodes of ${s.name} only: got ${got}, want ${s.nodes.map((n) => n.name)}`,
    );
  }
  await ai.getByRole("button", { name: "Cancel" }).click();
  log("the ISO build form lists the chosen server's nodes only");

  // The detail: its runs, and its log downloaded through a link (an iso_logs stream token).
  await ai.locator(`tr[data-iso="${isoName}"]`).getByRole("link", { name: isoName }).click();
  const runs = ai.getByTestId("iso-runs");
  await runs.locator("tr[data-run]").first().waitFor();
  check((await runs.locator("tr[data-run]").count()) === 1, "one run in the ISO's history");
  await runs.locator("tr[data-run]").first().getByText("build", { exact: true }).waitFor();
  const [dl] = await Promise.all([
    ai.waitForEvent("download"),
    ai.getByRole("toolbar", { name: "Log" }).getByRole("button", { name: "Download" }).click(),
  ]);
  const text = readFileSync(await dl.path(), "utf8");
  check(
    text.split("\n").filter(Boolean).length > 0 && !text.includes('"type":"urn:horizon'),
    `the ISO's log is downloaded:\n${text.slice(0, 300)}`,
  );
  log(`downloaded the ISO's log: ${text.split("\n").length} lines`);

  // A stack uses the ISO: a template whose db machine boots from an ISO, and a member's draft
  // that picks this one.
  const tmpl = (await apiAs(MEMBER, "GET", "/v1/templates")).items[0];
  const version = await apiAs(MEMBER, "GET", `/v1/templates/${tmpl.id}/versions/${tmpl.latest_version}`);
  const def = structuredClone(version.definition);
  def.phases[0].jobs[0].iso = true;
  const isoTmpl = await apiAs(ADMIN, "POST", "/v1/templates", { name: "sandbox-vm-iso", definition: def });
  const me = await apiAs(MEMBER, "GET", "/v1/me");
  const env = (await apiAs(MEMBER, "GET", "/v1/environments")).items[0];
  const job = def.phases[0].jobs[0].name;
  const jobs = { [job]: { executions: [{ proxmox_server_id: iso.proxmox_server_id, node: iso.node, iso_id: iso.id }] } };
  const stack = await apiAs(MEMBER, "POST", "/v1/stacks", {
    team_id: me.teams[0],
    name: "boots-installer",
    environment_id: env.id,
    template_id: isoTmpl.id,
    template_version: 1,
    jobs,
  });

  // Delete while used: refused, the refusal links the stack.
  const del = () => ai.getByRole("group", { name: "ISO actions" });
  await del()
    .getByRole("button", { name: `Delete ${isoName}` })
    .click();
  await del()
    .getByRole("button", { name: `Yes, delete ${isoName}` })
    .click();
  const refusal = del().getByRole("alert");
  await refusal.getByText(/is used by stack boots-installer/).waitFor();
  const link = refusal.getByRole("link", { name: "boots-installer" });
  check((await link.getAttribute("href")) === `#/stacks/${stack.id}`, "the refusal links the stack");
  await screen(ai, "iso-delete-refused");
  check((await apiAs(ADMIN, "GET", `/v1/isos/${iso.id}`)).state === "built", "a refused delete leaves the ISO built");
  await link.click();
  await ai.getByRole("heading", { name: /boots-installer/ }).waitFor();
  log("deleting an ISO a stack uses is refused, with a link to the stack");

  // Once the stack is removed, the delete goes through and the ISO leaves the list.
  await apiAs(MEMBER, "DELETE", `/v1/stacks/${stack.id}`);
  await ai.goBack();
  await ai.getByRole("heading", { name: new RegExp(isoName) }).waitFor();
  await del()
    .getByRole("button", { name: `Delete ${isoName}` })
    .click();
  await del()
    .getByRole("button", { name: `Yes, delete ${isoName}` })
    .click();
  await ai.getByRole("heading", { name: new RegExp(`${isoName} (removing|removed)`) }).waitFor();
  await ai.getByRole("heading", { name: new RegExp(`${isoName} removed`) }).waitFor({ timeout: 30_000 });
  await ai.getByTestId("iso-runs").locator("tr[data-run]").nth(1).waitFor();
  await ai.getByRole("link", { name: "ISOs" }).click();
  await ai.getByRole("heading", { name: "ISOs" }).waitFor();
  await ai.getByText("No ISO matches.").waitFor();
  check((await ai.locator(`tr[data-iso="${isoName}"]`).count()) === 0, "the deleted ISO is gone from the list");
  log("deleted the ISO once no stack used it; it left the list");
}
