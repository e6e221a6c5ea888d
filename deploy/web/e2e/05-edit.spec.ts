// Edit the deployed web-e2e: a plain edit saves without a run (after a 412 that names what
// another save changed); raising app #1's memory re-applies that machine alone, the form
// waiting while the run is in progress; replacing app #0 adds the new machine first and runs
// the old one's cleanup before it goes.
import { expect, hang, signInLink, stackNamed, test, unhang } from "./fixtures";

test("edit, re-apply and replace", async ({ page, lab, api, axe }) => {
  const stackId = await stackNamed(api, lab.member, "web-e2e");
  await page.goto(await signInLink(lab, lab.member, "#/stacks"));
  await expect(page.locator('tr[data-stack="web-e2e"]').getByText("deployed")).toBeVisible();
  const app = page.locator('fieldset[data-job="app"]');

  // Edit the deployed stack. A plain edit saves without a run; one that another save beat
  // answers 412 and the form reloads, naming what changed.
  const runs = async () => (await api(lab.member, "GET", `/v1/stacks/${stackId}/runs?limit=100`)).items.length;
  const runsBefore = await runs();
  await page.getByRole("link", { name: "web-e2e" }).click();
  await page.getByRole("link", { name: "Edit", exact: true }).click();
  await expect(page.getByRole("heading", { name: "Edit web-e2e" })).toBeVisible();
  await expect(page.getByText("No machine is touched")).toBeVisible();
  await expect(page.getByRole("button", { name: "No changes to save" }), "nothing to save before a change").toBeDisabled();
  await expect(page.getByLabel("Environment *"), "the environment is read-only once deployed").toBeDisabled();
  const cur = await fetch(`${lab.api}/v1/stacks/${stackId}`, { headers: { Authorization: `Bearer ${lab.member}` } });
  const botEdit = await fetch(`${lab.api}/v1/stacks/${stackId}`, {
    method: "PATCH",
    headers: { Authorization: `Bearer ${lab.member}`, "Content-Type": "application/json", "If-Match": cur.headers.get("ETag") ?? "" },
    body: JSON.stringify({ description: "described by a bot" }),
  });
  await cur.text();
  expect(botEdit.ok, `the bot's edit: ${botEdit.status} ${await botEdit.text()}`).toBe(true);
  await page.getByLabel("Labels").fill("e2e, web, edited");
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await expect(page.getByText("This stack was changed meanwhile")).toBeVisible();
  await expect(page.getByRole("status").filter({ hasText: "meanwhile" }), "the stale save names what changed").toContainText("description");
  await expect(page.getByLabel("Description"), "the form shows the stack as it is now").toHaveValue("described by a bot");
  await page.getByLabel("Labels").fill("e2e, web, edited");
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await expect(page.getByText("Saved; nothing had to run.")).toBeVisible();
  expect((await api(lab.member, "GET", `/v1/stacks/${stackId}`)).labels, "the labels were saved").toContain("edited");
  expect(await runs(), "a plain edit starts no run").toBe(runsBefore);

  // Raise app #1's memory: the plan re-applies that machine alone and says why.
  await app
    .locator(".exec")
    .nth(1)
    .getByLabel(/^memory_mb/)
    .selectOption("1024");
  const planned = page.locator('[data-plan-entry="app #1"]');
  await expect(planned.getByText("memory_mb: 512 → 1024")).toBeVisible();
  await expect(planned, "app #1 is re-applied").toHaveAttribute("data-action", "reapply");
  await expect(page.locator("[data-plan-entry]"), "nothing else is touched").toHaveCount(1);
  await expect(page.locator('[data-count="reapply"]'), "counted").toHaveText("1 to re-apply");
  await axe(page, "edit-plan");
  // Save and re-apply while the app's script hangs: the run is in progress, editing waits.
  hang();
  await page.getByRole("button", { name: "Save and re-apply" }).click();
  await page.waitForURL(new RegExp(`#/stacks/${stackId}$`));
  await expect(page.getByText("waiting for the license server").first()).toBeVisible({ timeout: 60_000 });
  await expect(page.getByRole("button", { name: "Edit", exact: true }), "Edit is disabled while the run is in progress").toBeDisabled();
  await page.goto(`${lab.console}/#/stacks/${stackId}/edit`);
  await expect(page.getByText(/run is (queued|running): editing is possible again when it ends/)).toBeVisible();
  await expect(page.getByLabel("Labels"), "the form is disabled while a run is in progress").toBeDisabled();
  await axe(page, "edit-busy");
  unhang();
  // The run ends: the form comes back, enabled, with the new memory.
  await expect(page.locator("#f-labels")).toBeEnabled({ timeout: 90_000 });
  await expect(page.getByText("No machine is touched")).toBeVisible();
  await expect(
    app
      .locator(".exec")
      .nth(1)
      .getByLabel(/^memory_mb/),
    "the edit is kept",
  ).toHaveValue("1024");
  await page.getByRole("link", { name: "Back to the stack" }).click();
  await expect(page.locator("h2", { has: page.locator('[data-run-kind="reapply"]') }).locator(".state-succeeded")).toBeVisible({
    timeout: 30_000,
  });
  const cards = () =>
    page.locator(".card").evaluateAll((cs) => cs.map((c) => `${c.getAttribute("data-card")}=${c.getAttribute("data-state")}`).sort());
  expect(await cards(), "only app #1 ran").toEqual(["app #0=skipped", "app #1=succeeded", "db #0=skipped"]);
  // The re-apply's columns are numbered as the template's phases (#29), not by the run's slots.
  const columns = page.getByRole("list", { name: "Pipeline" }).getByRole("listitem");
  expect(await columns.evaluateAll((cs) => cs.map((c) => c.getAttribute("aria-label"))), "phases 1 and 2 of the template").toEqual([
    "Phase 1: database",
    "Phase 2: application",
  ]);

  // Replace app #0 by adding first: the plan says so, the old one's cleanup runs before it is
  // destroyed (in the log), and the name is typed because a machine goes.
  await page.getByRole("link", { name: "Edit", exact: true }).click();
  await expect(page.getByText("No machine is touched")).toBeVisible();
  await app.getByRole("button", { name: "Remove app #0" }).click();
  await app.getByRole("button", { name: "Add machine to app" }).click();
  // A machine keeps its number (#29): the survivor is still app #1, the new one is app #2,
  // the number the API gives it.
  await expect(app.locator(".exec h4"), "the form keeps the survivor's number").toHaveText(["app #1", "app #2"]);
  const added = app.locator(".exec").nth(1);
  const free = await added.getByLabel("Address *").locator("option", { hasText: "vm-15" }).getAttribute("value");
  await added.getByLabel("Address *").selectOption(free!);
  await added.getByLabel("Node *").selectOption("pve1");
  const addedPool = added.getByLabel(/^Resource pool/);
  if (await addedPool.count()) await addedPool.selectOption("dev");
  await expect(page.getByText("app: replaced by adding the new machine first, then removing the old one.")).toBeVisible();
  await expect(
    page.locator('[data-plan-entry="app #0"][data-action="destroy"]').getByText("First runs its cleanup: deregister"),
  ).toBeVisible();
  await expect(page.locator('[data-action="create"]'), "one machine is added").toHaveCount(1);
  const replace = page.getByRole("button", { name: "Save and re-apply" });
  await expect(replace, "a save that destroys a machine waits for the name").toBeDisabled();
  await page.getByLabel(/Type the stack's name/).fill("web-e2e");
  await axe(page, "edit-replace");
  await replace.click();
  await page.waitForURL(new RegExp(`#/stacks/${stackId}$`));
  // This run's pipeline has a card for the new machine; wait for it, and for the run to end.
  await expect(page.locator('.card[data-card="app #2"]')).toBeVisible({ timeout: 30_000 });
  await expect(page.locator("h2", { has: page.locator('[data-run-kind="reapply"]') }).locator(".state-succeeded")).toBeVisible({
    timeout: 90_000,
  });
  expect(await cards(), "the new app #2 was built and app #0 destroyed, nothing else").toEqual([
    "app #0=succeeded",
    "app #1=skipped",
    "app #2=succeeded",
    "db #0=skipped",
  ]);
  await page.getByRole("toolbar", { name: "Log" }).getByLabel("Search").fill("deregistering");
  await expect(page.getByText(/^\d+ found/)).toBeVisible();
  expect(await columns.evaluateAll((cs) => cs.map((c) => c.getAttribute("aria-label"))), "replacing stays in phase 2").toEqual([
    "Phase 1: database",
    "Phase 2: application",
    "Phase 2: application (remove after replacing)",
  ]);
});
