// web-e2e's end: duplicated into a draft (what could not be copied is named); its machines on
// the Startup page and its addresses in the catalogue; an admin adds version 2 of its template
// (after a refused path and a refused definition) and upgrades the stack to it, destroying the
// apps; the member removes it after typing its name. The duplicate is deployed, hangs, is
// canceled, and an admin force-removes it and downloads its abandon manifest.
import { readFileSync } from "node:fs";
import { expect, hang, signInLink, stackNamed, test, unhang } from "./fixtures";

test("duplicate, upgrade, remove, force-remove", async ({ page, lab, api, axe, signIn }) => {
  test.setTimeout(12 * 60_000);
  const stackId = await stackNamed(api, lab.member, "web-e2e");
  await page.goto(await signInLink(lab, lab.member, `#/stacks/${stackId}`));
  await expect(page.locator(".page-head .state-deployed")).toBeVisible();
  const db = page.locator('fieldset[data-job="db"]'),
    app = page.locator('fieldset[data-job="app"]');

  // Duplicate: a new draft in the create form, with what could be copied.
  await page.getByRole("button", { name: "Duplicate" }).click();
  await page.waitForURL(/#\/stacks\/[0-9a-f-]+\/edit$/);
  expect(page.url(), "the duplicate is another stack").not.toContain(stackId);
  const dupId = /stacks\/([0-9a-f-]+)\/edit/.exec(page.url())![1];
  await expect(page.getByRole("heading", { name: /^Draft / })).toBeVisible();
  await expect(db.getByLabel("memory_mb"), "answers copied").not.toHaveValue("");
  await expect(db.getByLabel("Address *"), "addresses left empty").toHaveValue("");
  // The draft opens with a notice of what the copy left out (the duplicate's not_copied).
  await expect(page.getByTestId("duplicate-notice").getByText(/^db #0 · address: /)).toBeVisible();
  await axe(page, "duplicate-draft");
  await page.goto(`${lab.console}/#/stacks/${stackId}`);
  await expect(page.locator(".card").first()).toBeVisible();

  // Startup: the stack's three machines, with their host and the state Proxmox reports.
  await page.getByRole("link", { name: "Startup" }).click();
  await expect(page.locator('tr[data-machine="web-e2e app #1"]')).toBeVisible();
  const machines = await page
    .locator('tr[data-machine^="web-e2e "]')
    .evaluateAll((rs) => rs.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent ?? "")));
  expect(machines, "three machines").toHaveLength(3);
  for (const m of machines) {
    expect(m[4], `a machine's host: ${JSON.stringify(m)}`).toMatch(/^pve\d$/);
    expect(m[5], `its VM: ${JSON.stringify(m)}`).toMatch(/^\d+$/);
    expect(m[6], `its state: ${JSON.stringify(m)}`).not.toBe("");
  }
  await axe(page, "startup");
  // The network's addresses say which stack holds them.
  await page.getByRole("link", { name: "Catalogue" }).click();
  await page.getByRole("link", { name: "Networks" }).click();
  await page.locator("tr[data-network] a").first().click();
  const held = page.locator("tr[data-address]", { has: page.getByRole("link", { name: "web-e2e" }) });
  await expect(held, "three addresses held by web-e2e").toHaveCount(3);
  await axe(page, "catalogue-addresses");
  await page.getByRole("link", { name: "web-e2e" }).first().click();
  await expect(page.locator(".card").first()).toBeVisible();

  // Templates: a member reads them and is offered no write; an admin adds a version, after
  // a definition the API refuses with its problems named.
  await page.getByRole("link", { name: "Templates" }).click();
  await page.getByRole("link", { name: "sandbox-vm" }).click();
  await expect(page.getByText("The first version.")).toBeVisible();
  await expect(page.locator('.preview fieldset[data-job="app"]')).toBeVisible();
  await expect(
    page.getByRole("button", { name: /^(New version|New template|Deactivate.*)$/ }),
    "a member is offered no template write",
  ).toHaveCount(0);
  const a2 = await signIn(lab.admin, "#/templates");
  await a2.getByRole("link", { name: "sandbox-vm" }).click();
  await expect(a2.getByText("Nothing changed: the branches still point to the commits it pinned.")).toBeVisible();
  await axe(a2, "template");
  await a2.getByRole("button", { name: "New version" }).click();
  // From git: a file the branch lacks is refused on the path's field.
  await expect(a2.getByLabel("Repository *"), "the repository is prefilled").not.toHaveValue("");
  await a2.getByLabel("Path", { exact: true }).fill("nope.yaml");
  await a2.getByRole("button", { name: "Create version" }).click();
  await expect(a2.locator(".field.has-error").getByText(/is not a file of main/)).toBeVisible({ timeout: 60_000 });
  await axe(a2, "template-version-from-git-refused");
  await a2.getByLabel("pasted here").check();
  const defText = await a2.getByLabel("Definition (YAML or JSON) *").inputValue();
  expect(defText, "the new version starts from the current definition").toContain('"name": "sandbox-vm"');
  await a2.getByLabel("Definition (YAML or JSON) *").fill('{"name": "sandbox-vm", "phases": []}');
  await a2.getByRole("button", { name: "Create version" }).click();
  await expect(a2.getByText(/The definition has \d+ problem/)).toBeVisible({ timeout: 60_000 });
  await axe(a2, "template-version-invalid");
  // Version 2 drops the app job (and the action that runs on it).
  const v2 = JSON.parse(defText);
  v2.phases = v2.phases.filter((p: { jobs: { name: string }[] }) => !p.jobs.some((j) => j.name === "app"));
  delete v2.actions;
  await a2.getByLabel("Definition (YAML or JSON) *").fill(JSON.stringify(v2, null, 2));
  await a2.getByRole("button", { name: "Create version" }).click();
  await a2.waitForURL(/v=2$/, { timeout: 60_000 });
  await expect(a2.locator('[data-change="job app"]').getByText("removed")).toBeVisible();
  await axe(a2, "template-version-changes");

  // Upgrade the stack to it: the plan destroys both apps (their cleanup first), so the name is
  // typed; the upgrade run destroys them and leaves the db.
  await a2.goto(`${lab.console}/#/stacks/${stackId}/edit`);
  await a2.getByLabel("Version *").selectOption("2");
  await expect(a2.getByRole("region", { name: "Template changes" }).locator('[data-change="job app"]')).toBeVisible();
  await expect(
    a2.locator('[data-plan-entry="app #1"][data-action="destroy"]').getByText("First runs its cleanup: deregister"),
  ).toBeVisible();
  await expect(a2.locator('[data-action="destroy"]'), "both apps are destroyed").toHaveCount(2);
  const upgrade = a2.getByRole("button", { name: "Upgrade to v2" });
  await expect(upgrade, "the upgrade waits for the name").toBeDisabled();
  await a2.getByLabel(/Type the stack's name/).fill("web-e2e");
  await axe(a2, "upgrade-plan");
  await upgrade.click();
  await a2.waitForURL(new RegExp(`#/stacks/${stackId}$`));
  await expect(a2.locator("h2", { has: a2.locator('[data-run-kind="upgrade"]') }).locator(".state-succeeded")).toBeVisible({
    timeout: 90_000,
  });
  const upgraded = await api(lab.admin, "GET", `/v1/stacks/${stackId}`);
  expect(upgraded.template_version, "upgraded to v2").toBe(2);
  expect(
    upgraded.jobs.app === undefined || upgraded.jobs.app.executions.every((e: { state: string }) => e.state === "removed"),
    `without apps: ${JSON.stringify(upgraded.jobs).slice(0, 300)}`,
  ).toBe(true);

  // Remove: what happens, in order, and the name typed to confirm.
  await page.goto(`${lab.console}/#/stacks/${stackId}`);
  await page.getByRole("button", { name: "Remove" }).click();
  const rm = page.getByRole("alertdialog");
  // The dialog draws its steps once the stack's jobs are loaded.
  await expect(rm.locator("li"), "the removal's steps are listed").toHaveCount(3);
  await expect(rm.locator("li").first(), "what is destroyed first").toContainText("Its 1 execution is destroyed");
  await expect(rm.getByRole("button", { name: "Yes, remove" }), "remove waits for the name").toBeDisabled();
  await rm.getByLabel(/Type the stack's name/).fill("web-e2");
  await expect(rm.getByRole("button", { name: "Yes, remove" }), "a wrong name does not confirm").toBeDisabled();
  await rm.getByLabel(/Type the stack's name/).fill("web-e2e");
  await axe(page, "detail-remove-confirm");
  await rm.getByRole("button", { name: "Yes, remove" }).click();
  await expect(page.locator(".page-head .state-removed")).toBeVisible({ timeout: 120_000 });

  // Force-remove for real: the duplicate is deployed, its app hangs and the run is canceled;
  // the failed stack is force-removed by an admin, and the manifest downloaded.
  hang();
  await page.goto(`${lab.console}/#/stacks/${dupId}/edit`);
  await expect(app.getByRole("button", { name: "Add machine to app" })).toBeVisible();
  // Two apps are wanted below. The duplicate was seen with one app, and with none, in loaded
  // runs (an open question, reported): this part tests force-remove, so it adds the machines.
  for (let n = await app.locator(".exec").count(); n < 2; n++) {
    console.log(`the duplicate came with ${await app.locator(".exec").count()} app executions; adding one`);
    await app.getByRole("button", { name: "Add machine to app" }).click();
  }
  await expect(app.locator(".exec").nth(1)).toBeVisible();
  const dupName = await page.getByLabel("Name *").inputValue();
  // Addresses by name: the free list moved while the first stack was removed.
  const place = async (scope: typeof db, addr: string, node: string) => {
    await scope.getByLabel("Address *").selectOption(
      (await scope
        .getByLabel("Address *")
        .locator("option", { hasText: `${addr} (` })
        .getAttribute("value"))!,
    );
    await scope.getByLabel("Node *").selectOption(node);
    const pool = scope.getByLabel(/^Resource pool/);
    if (await pool.count()) await pool.selectOption("dev");
  };
  await place(db.locator(".exec").nth(0), "vm-16", "pve1");
  await place(app.locator(".exec").nth(0), "vm-17", "pve2");
  await place(app.locator(".exec").nth(1), "vm-18", "pve3");
  await page.getByRole("button", { name: "Deploy" }).click();
  await page.waitForURL(new RegExp(`#/stacks/${dupId}$`), { timeout: 30_000 });
  await expect(page.getByText("waiting for the license server").first()).toBeVisible({ timeout: 90_000 });
  await page.getByRole("button", { name: "Cancel run" }).click();
  await page.getByRole("button", { name: "Yes, cancel the run" }).click();
  await expect(page.locator(".page-head .state-failed")).toBeVisible({ timeout: 60_000 });
  unhang();
  await a2.goto(`${lab.console}/#/stacks/${dupId}`);
  await a2.getByRole("button", { name: "Force-remove" }).click();
  const fr = a2.getByRole("alertdialog");
  await expect(fr.locator("tr[data-vm]").first()).toBeVisible();
  const leftVMs = await fr.locator("tr[data-vm]").count();
  await fr.getByLabel(/Type the stack's name/).fill(dupName);
  const [fdl] = await Promise.all([a2.waitForEvent("download"), fr.getByRole("button", { name: "Yes, force-remove" }).click()]);
  const abandoned = JSON.parse(readFileSync((await fdl.path())!, "utf8"));
  expect(
    [abandoned.stack_id, abandoned.vms.length],
    `the manifest lists the ${leftVMs} VMs shown: ${JSON.stringify(abandoned).slice(0, 300)}`,
  ).toEqual([dupId, leftVMs]);
  expect(leftVMs, "at least one VM is left behind").toBeGreaterThanOrEqual(1);
  await expect(a2.locator(".page-head .state-removed")).toBeVisible();
  await expect(a2.getByText(/It was force-removed/)).toBeVisible();
  await axe(a2, "detail-force-removed");
});
