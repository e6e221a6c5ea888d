// The actions journey (issue #17) on web-e2e as 05-edit left it (a db and two built apps): the
// terraform action create-pool runs twice with different values and leaves two instances; the
// first is undone after a confirmation and shows so; the script action rotate-api-key runs on a
// chosen machine and its run, with its (revealable) secret output, is in the history; a viewer
// sees the buttons disabled with the reason the API's allowed_actions gives. The second
// instance is undone at the end, so the stack goes on as it came.
import { expect, signInLink, stackNamed, test } from "./fixtures";

test("actions", async ({ page, lab, api, axe, signIn }) => {
  const stackId = await stackNamed(api, lab.member, "web-e2e");
  await page.goto(await signInLink(lab, lab.member, `#/stacks/${stackId}`));
  const section = page.getByRole("region", { name: "Actions" });
  const pool = section.locator('li[data-action="create-pool"]');
  await expect(pool, "the action's kind is shown").toContainText("terraform");
  await expect(section.locator('li[data-action="rotate-api-key"]'), "and its description").toContainText("Make a new API key");
  const instance = (n: number) => section.locator(`tr[data-instance="create-pool #${n}"]`);

  // create-pool, twice, with different values: the prefill is there and editable.
  const runPool = async (n: number, name: string, comment: string) => {
    await pool.getByRole("button", { name: "Run create-pool…" }).click();
    const form = page.getByRole("form", { name: "Run create-pool" });
    await expect(form.getByLabel("db_host"), "db_host is prefilled with the db's address").toHaveValue(/^\d+\.\d+\.\d+\.\d+$/);
    await expect(form.getByText("from db.outputs.ip")).toBeVisible();
    await form.getByLabel(/^pool/).fill(name);
    await form.getByLabel(/^comment/).fill(comment);
    if (n === 1) await axe(page, "actions-form");
    const pipelineRun = ((await page.locator("h2", { hasText: "Pipeline" }).textContent()) ?? "").replace(/started .*/, "");
    await form.getByRole("button", { name: "Start create-pool" }).click();
    // The action's run shows here (#29): in the history, named in a notice until it ends…
    await expect(section.locator('tr[data-action-run="create-pool"]').first()).toBeVisible({ timeout: 30_000 });
    await expect(instance(n).and(page.locator('[data-state="active"]'))).toBeVisible({ timeout: 90_000 });
    await expect(page.getByTestId("action-started")).toHaveText("", { timeout: 30_000 });
    // …and the stack's job pipeline stays, with its Run again buttons.
    expect(
      ((await page.locator("h2", { hasText: "Pipeline" }).textContent()) ?? "").replace(/started .*/, ""),
      "the pipeline still shows the stack's run",
    ).toBe(pipelineRun);
    // The cards offer Run again once the action's run has ended (the instance turns active and
    // the notice clears a moment before the run's end makes the stack idle again).
    await expect(page.getByRole("button", { name: /^Run again: app #/ }).first()).toBeVisible({ timeout: 30_000 });
    await expect(instance(n), `instance #${n} holds its answers`).toContainText(`pool=${name}`);
  };
  await runPool(1, "e2e-pool-a", "first");
  await runPool(2, "e2e-pool-b", "second");
  const listed = (await api(lab.member, "GET", `/v1/stacks/${stackId}/action-instances`)).items;
  expect(
    listed.map((i: { state: string }) => i.state),
    `two instances: ${JSON.stringify(listed).slice(0, 300)}`,
  ).toEqual(["active", "active"]);
  await axe(page, "actions-instances");

  // Undo the first, after a confirmation: it shows undone and cannot be undone again.
  await instance(1).getByRole("button", { name: "Undo create-pool #1" }).click();
  const confirm = section.getByRole("alertdialog");
  await expect(confirm.getByText("Undo create-pool #1?")).toBeVisible();
  await expect(confirm.getByRole("button", { name: "No" }), "the undo confirmation focuses the safe answer").toBeFocused();
  await axe(page, "actions-undo-confirm");
  await confirm.getByRole("button", { name: "Yes, undo create-pool #1" }).click();
  await expect(instance(1).and(page.locator('[data-state="undone"]'))).toBeVisible({ timeout: 90_000 });
  await expect(instance(1).getByRole("button", { name: /^Undo/ }), "an undone instance cannot be undone again").toHaveCount(0);
  await expect(instance(2), "the second instance stays").toHaveAttribute("data-state", "active");
  const left = (await api(lab.member, "GET", `/v1/stacks/${stackId}/action-instances`)).items;
  expect(
    left.map((i: { number: number }) => i.number),
    `only #2 is left: ${JSON.stringify(left).slice(0, 200)}`,
  ).toEqual([2]);

  // rotate-api-key on a chosen machine: two are built, so none is preselected.
  const rotate = section.locator('li[data-action="rotate-api-key"]');
  await rotate.getByRole("button", { name: "Run rotate-api-key…" }).click();
  const form = page.getByRole("form", { name: "Run rotate-api-key" });
  const machine = form.getByLabel("Machine *");
  await expect(machine, "no machine is preselected among two").toHaveValue("");
  await expect(form.getByRole("button", { name: "Start rotate-api-key" }), "it waits for a machine").toBeDisabled();
  const choices = await machine
    .locator("option:not([disabled])")
    .evaluateAll((os) => os.map((o) => [(o as HTMLOptionElement).value, o.textContent ?? ""]).filter(([v]) => v !== ""));
  expect(choices, `two built machines to pick: ${JSON.stringify(choices)}`).toHaveLength(2);
  const [value, label] = choices[1];
  await machine.selectOption(value);
  await form.getByLabel(/^key_bytes/).fill("24");
  await axe(page, "actions-script-form");
  await form.getByRole("button", { name: "Start rotate-api-key" }).click();
  const row = section.locator('tr[data-action-run="rotate-api-key"]').first();
  await expect(row.locator(".state-succeeded")).toBeVisible({ timeout: 90_000 });
  const machineName = label.replace(/ \(.*$/, "");
  await expect(row.locator("td").nth(3), `it ran on the chosen machine ${machineName}`).toHaveText(machineName);
  await expect(row, "its parameters are listed").toContainText("key_bytes=24");
  const runId = await row.getAttribute("data-run");
  const secret = await api(lab.member, "POST", `/v1/stacks/${stackId}/runs/${runId}/outputs/api_key/reveal`);
  expect(await page.content(), "the secret output is not shown").not.toContain(secret.value);
  await row.getByRole("button", { name: "Reveal api_key" }).click();
  await expect(row.getByText(secret.value)).toBeVisible();
  await row.getByRole("button", { name: "Hide api_key" }).click();
  await axe(page, "actions-history");

  // A viewer: the actions are listed, their buttons disabled with the reason.
  const vpage = await signIn(lab.viewer, `#/stacks/${stackId}`);
  const vsection = vpage.getByRole("region", { name: "Actions" });
  await expect(vsection.locator('tr[data-instance="create-pool #2"]')).toBeVisible();
  await expect(vsection.getByText("Viewers cannot run actions.").first()).toBeVisible();
  for (const name of ["Run create-pool…", "Run rotate-api-key…", "Undo create-pool #2"])
    await expect(vsection.getByRole("button", { name }), `a viewer's ${name} is disabled`).toBeDisabled();
  await axe(vpage, "actions-viewer");
  await vpage.context().close();

  // Leave the stack as it came: undo the second instance too.
  await instance(2).getByRole("button", { name: "Undo create-pool #2" }).click();
  await section.getByRole("alertdialog").getByRole("button", { name: "Yes, undo create-pool #2" }).click();
  await expect(instance(2).and(page.locator('[data-state="undone"]'))).toBeVisible({ timeout: 90_000 });
  await expect(page.locator(".page-head .state-deployed")).toBeVisible({ timeout: 30_000 });
  expect((await api(lab.member, "GET", `/v1/stacks/${stackId}/action-instances`)).items, "no instance is left").toHaveLength(0);
});
