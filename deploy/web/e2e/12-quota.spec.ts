// The quota journey, last, when the member's team has nothing deployed left: an admin sets the
// team's machines quota on the team page (a negative limit first, refused on its field); the
// member's new stack form says it takes more than remains; deploying it is refused with the
// machine named on its execution, and nothing is started.
import { expect, signInLink, test } from "./fixtures";

test("a deploy over the quota", async ({ page, lab, api, axe, signIn }) => {
  const me = await api(lab.member, "GET", "/v1/me");
  const team = (await api(lab.member, "GET", "/v1/teams")).items.find((t: { id: string }) => t.id === me.teams[0]);
  const used = (await api(lab.member, "GET", `/v1/teams/${team.id}/usage`)).machines.used;

  // The admin sets the quota on the team page: what the team uses now, so nothing is left.
  const ai = await signIn(lab.admin, "#/stacks");
  await ai.getByRole("link", { name: "People" }).click();
  await ai.getByRole("link", { name: "Teams" }).click();
  const row = ai.locator(`tr[data-team="${team.name}"]`);
  await row.getByRole("button", { name: `Set quota of ${team.name}` }).click();
  const machines = row.getByLabel("Machines", { exact: true });
  await machines.fill("-1");
  await row.getByRole("button", { name: "Save" }).click();
  await expect(row.locator(".field.has-error").first()).toBeVisible();
  await expect(machines, "a negative limit is refused on its field").toHaveAttribute("aria-invalid", "true");
  await machines.fill(String(used));
  await row.getByRole("button", { name: "Save" }).click();
  await expect(row.getByText(`${used} of ${used} used, 0 left`)).toBeVisible();
  expect((await api(lab.admin, "GET", `/v1/teams/${team.id}/quotas`)).limits.machines, "the quota is saved").toBe(used);
  await axe(ai, "people-team-quota");

  // The member's form says what a new stack takes of what remains.
  await page.goto(await signInLink(lab, lab.member, "#/stacks"));
  await page.getByRole("link", { name: "New stack" }).first().click();
  await page.getByLabel("Template *").selectOption({ label: "sandbox-vm" });
  await expect(page.locator('fieldset[data-job="db"]')).toBeVisible();
  const hint = page.getByRole("status", { name: "Quota" }).locator('[data-dimension="machines"]');
  await expect(hint.getByText(/This stack uses \d+ of 0 remaining Machines: more than the team has left/)).toBeVisible();
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
  await expect(
    page
      .locator(".exec")
      .getByText(/exceeds the machines quota: needs \d+ machines? more, but the team has 0 of its 0 left/)
      .first(),
  ).toBeVisible();
  await expect(
    page
      .getByTestId("error-summary")
      .getByText(/(app|db) #0/)
      .first(),
  ).toBeVisible();
  await axe(page, "create-over-quota");
  const stack = (await api(lab.member, "GET", "/v1/stacks?limit=200")).items.find((s: { name: string }) => s.name === "over-quota");
  expect(stack?.state, "the refused stack stays a draft").toBe("draft");
  expect((await api(lab.member, "GET", `/v1/stacks/${stack.id}/runs`)).items, "no run was started").toHaveLength(0);

  await api(lab.member, "DELETE", `/v1/stacks/${stack.id}`);
  await api(lab.admin, "PUT", `/v1/teams/${team.id}/quotas`, {});
});
