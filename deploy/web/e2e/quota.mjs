// The quota journey of the console's end-to-end scenario (run.mjs calls it at its end, when the
// member's team has nothing deployed left): an admin sets the team's machines quota on the team
// page (a negative limit first, refused on its field); the member's new stack form says it
// takes more than remains; deploying it is refused with the machine named on its execution,
// and nothing is started.

/**
 * quotaJourney runs it with the admin's page ai and the member's page.
 * @param {object} o - { ai, page, apiAs, screen, check, log, ADMIN, MEMBER }
 */
export async function quotaJourney({ ai, page, apiAs, screen, check, log, ADMIN, MEMBER }) {
  const me = await apiAs(MEMBER, "GET", "/v1/me");
  const team = (await apiAs(MEMBER, "GET", "/v1/teams")).items.find((t) => t.id === me.teams[0]);
  const used = (await apiAs(MEMBER, "GET", `/v1/teams/${team.id}/usage`)).machines.used;

  // The admin sets the quota on the team page: what the team uses now, so nothing is left.
  await ai.getByRole("link", { name: "People" }).click();
  await ai.getByRole("link", { name: "Teams" }).click();
  const row = ai.locator(`tr[data-team="${team.name}"]`);
  await row.getByRole("button", { name: `Set quota of ${team.name}` }).click();
  const machines = row.getByLabel("Machines", { exact: true });
  await machines.fill("-1");
  await row.getByRole("button", { name: "Save" }).click();
  await row.locator(".field.has-error").first().waitFor();
  check((await machines.getAttribute("aria-invalid")) === "true", "a negative limit is refused on its field");
  await machines.fill(String(used));
  await row.getByRole("button", { name: "Save" }).click();
  await row.getByText(`${used} of ${used} used, 0 left`).waitFor();
  check((await apiAs(ADMIN, "GET", `/v1/teams/${team.id}/quotas`)).limits.machines === used, "the quota is saved");
  await screen(ai, "people-team-quota");
  log(`an admin set ${team.name}'s machines quota to ${used} on the team page`);

  // The member's form says what a new stack takes of what remains.
  await page.getByRole("link", { name: "Stacks" }).first().click();
  await page.getByRole("link", { name: "New stack" }).first().click();
  await page.getByLabel("Template *").selectOption({ label: "sandbox-vm" });
  const db = page.locator('fieldset[data-job="db"]');
  await db.waitFor();
  const hint = page.getByRole("status", { name: "Quota" }).locator('[data-dimension="machines"]');
  await hint.getByText(/This stack uses \d+ of 0 remaining Machines: more than the team has left/).waitFor();
  await page.getByLabel("Name *").fill("over-quota");
  // Every machine the form starts with (the template's latest version decides which) gets
  // what it needs, so that the quota is the only problem left.
  const execs = page.locator("fieldset[data-job] .exec");
  for (let i = 0; i < (await execs.count()); i++) {
    const e = execs.nth(i);
    await e.getByLabel("Address *").selectOption({ index: i + 1 });
    await e.getByLabel("Node *").selectOption("pve1");
    const pool = e.getByLabel(/^Resource pool/);
    if (await pool.count()) await pool.selectOption("dev");
  }

  // Deploying it is refused before anything starts, the machine named on its execution.
  await page.getByRole("button", { name: "Deploy" }).click();
  // The server names the first machine (in job order) that the quota cannot hold.
  await page
    .locator(".exec")
    .getByText(/exceeds the machines quota: needs \d+ machines? more, but the team has 0 of its 0 left/)
    .first()
    .waitFor();
  await page
    .getByTestId("error-summary")
    .getByText(/(app|db) #0/)
    .first()
    .waitFor();
  await screen(page, "create-over-quota");
  const stack = (await apiAs(MEMBER, "GET", "/v1/stacks?limit=200")).items.find((s) => s.name === "over-quota");
  check(stack?.state === "draft", `the refused stack stays a draft (got ${stack?.state})`);
  check((await apiAs(MEMBER, "GET", `/v1/stacks/${stack.id}/runs`)).items.length === 0, "no run was started");
  log("a deploy over the quota was refused on the machine it names; nothing started");

  await apiAs(MEMBER, "DELETE", `/v1/stacks/${stack.id}`);
  await apiAs(ADMIN, "PUT", `/v1/teams/${team.id}/quotas`, {});
}
