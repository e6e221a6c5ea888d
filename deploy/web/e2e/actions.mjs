// The actions journey (issue #17), called by run.mjs on its deployed sandbox-vm stack (a db and
// two built apps): the terraform action create-pool runs twice with different values and
// leaves two instances; the first is undone after a confirmation and shows so; the script
// action rotate-api-key runs on a chosen machine and its run, with its (revealable) secret
// output, is in the history; a viewer sees the buttons disabled with the reason the API's
// allowed_actions gives. The second instance is undone at the end, so the stack goes on as it
// came. Screens are checked with axe like the others.

/**
 * @param {object} o
 * @param {import("playwright-core").Browser} o.browser
 * @param {import("playwright-core").Page} o.page a member's page
 */
export async function actionsJourney({ browser, page, stackId, CONSOLE, VIEWER, MEMBER, apiAs, screen, check, log }) {
  await page.goto(`${CONSOLE}/#/stacks/${stackId}`);
  const section = page.getByRole("region", { name: "Actions" });
  const pool = section.locator('li[data-action="create-pool"]');
  await pool.waitFor();
  check((await pool.textContent()).includes("terraform"), "the action's kind is shown");
  check((await section.locator('li[data-action="rotate-api-key"]').textContent()).includes("Make a new API key"), "and its description");
  const instance = (n) => section.locator(`tr[data-instance="create-pool #${n}"]`);

  // create-pool, twice, with different values: the prefill is there and editable.
  const runPool = async (n, name, comment) => {
    await pool.getByRole("button", { name: "Run create-pool…" }).click();
    const form = page.getByRole("form", { name: "Run create-pool" });
    const dbHost = form.getByLabel("db_host");
    check(
      /^\d+\.\d+\.\d+\.\d+$/.test(await dbHost.inputValue()),
      `db_host is prefilled with the db's address: ${await dbHost.inputValue()}`,
    );
    await form.getByText("from db.outputs.ip").waitFor();
    await form.getByLabel(/^pool/).fill(name);
    await form.getByLabel(/^comment/).fill(comment);
    if (n === 1) await screen(page, "actions-form");
    const pipelineRun = await page.locator("h2", { hasText: "Pipeline" }).textContent();
    await form.getByRole("button", { name: "Start create-pool" }).click();
    // The action's run shows here (#29): in the history, named in a notice until it ends…
    await section.locator('tr[data-action-run="create-pool"]').first().waitFor({ timeout: 30_000 });
    await instance(n).and(page.locator('[data-state="active"]')).waitFor({ timeout: 90_000 });
    await page.waitForFunction(() => document.querySelector('[data-testid="action-started"]')?.textContent === "", null, {
      timeout: 30_000,
    });
    // …and the stack's job pipeline stays, with its Run again buttons.
    check(
      (await page.locator("h2", { hasText: "Pipeline" }).textContent()).replace(/started .*/, "") === pipelineRun.replace(/started .*/, ""),
      `the pipeline still shows the stack's run: ${pipelineRun}`,
    );
    // The cards offer Run again once the action's run has ended (the instance turns active and
    // the notice clears a moment before the run's end makes the stack idle again).
    await page
      .getByRole("button", { name: /^Run again: app #/ })
      .first()
      .waitFor({ timeout: 30_000 });
    check((await instance(n).textContent()).includes(`pool=${name}`), `instance #${n} holds its answers`);
  };
  await runPool(1, "e2e-pool-a", "first");
  await runPool(2, "e2e-pool-b", "second");
  const listed = (await apiAs(MEMBER, "GET", `/v1/stacks/${stackId}/action-instances`)).items;
  check(listed.length === 2 && listed.every((i) => i.state === "active"), `two instances: ${JSON.stringify(listed).slice(0, 300)}`);
  await screen(page, "actions-instances");
  log("create-pool ran twice: two instances");

  // Undo the first, after a confirmation: it shows undone and cannot be undone again.
  await instance(1).getByRole("button", { name: "Undo create-pool #1" }).click();
  const confirm = section.getByRole("alertdialog");
  await confirm.getByText("Undo create-pool #1?").waitFor();
  check(
    await confirm.getByRole("button", { name: "No" }).evaluate((b) => b === document.activeElement),
    "the undo confirmation focuses the safe answer",
  );
  await screen(page, "actions-undo-confirm");
  await confirm.getByRole("button", { name: "Yes, undo create-pool #1" }).click();
  await instance(1).and(page.locator('[data-state="undone"]')).waitFor({ timeout: 90_000 });
  check((await instance(1).getByRole("button", { name: /^Undo/ }).count()) === 0, "an undone instance cannot be undone again");
  check((await instance(2).getAttribute("data-state")) === "active", "the second instance stays");
  const left = (await apiAs(MEMBER, "GET", `/v1/stacks/${stackId}/action-instances`)).items;
  check(left.length === 1 && left[0].number === 2, `only #2 is left: ${JSON.stringify(left).slice(0, 200)}`);
  log("undid instance #1; #2 stays");

  // rotate-api-key on a chosen machine: two are built, so none is preselected.
  const rotate = section.locator('li[data-action="rotate-api-key"]');
  await rotate.getByRole("button", { name: "Run rotate-api-key…" }).click();
  const form = page.getByRole("form", { name: "Run rotate-api-key" });
  const machine = form.getByLabel("Machine *");
  check((await machine.inputValue()) === "", "no machine is preselected among two");
  check(await form.getByRole("button", { name: "Start rotate-api-key" }).isDisabled(), "it waits for a machine");
  const choices = await machine
    .locator("option:not([disabled])")
    .evaluateAll((os) => os.map((o) => [o.value, o.textContent]).filter(([v]) => v !== ""));
  check(choices.length === 2, `two built machines to pick: ${JSON.stringify(choices)}`);
  const [value, label] = choices[1];
  await machine.selectOption(value);
  await form.getByLabel(/^key_bytes/).fill("24");
  await screen(page, "actions-script-form");
  await form.getByRole("button", { name: "Start rotate-api-key" }).click();
  const row = section.locator('tr[data-action-run="rotate-api-key"]').first();
  await row.locator(".state-succeeded").waitFor({ timeout: 90_000 });
  const machineName = label.replace(/ \(.*$/, "");
  check(
    (await row.locator("td").nth(3).textContent()) === machineName,
    `it ran on the chosen machine ${machineName}: ${await row.locator("td").nth(3).textContent()}`,
  );
  check((await row.textContent()).includes("key_bytes=24"), "its parameters are listed");
  const runId = await row.getAttribute("data-run");
  const secret = await apiAs(MEMBER, "POST", `/v1/stacks/${stackId}/runs/${runId}/outputs/api_key/reveal`);
  check(!(await page.content()).includes(secret.value), "the secret output is not shown");
  await row.getByRole("button", { name: "Reveal api_key" }).click();
  await row.getByText(secret.value).waitFor();
  await row.getByRole("button", { name: "Hide api_key" }).click();
  await screen(page, "actions-history");
  log(`rotate-api-key ran on ${machineName}; its secret output revealed`);

  // A viewer: the actions are listed, their buttons disabled with the reason.
  const vctx = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  const vpage = await vctx.newPage();
  vpage.setDefaultTimeout(20_000);
  const { code } = await apiAs(VIEWER, "POST", "/v1/sign-in-codes"); // a sign-in link's one-time code
  await vpage.goto(`${CONSOLE}/#code=${code}&next=${encodeURIComponent(`#/stacks/${stackId}`)}`);
  const vsection = vpage.getByRole("region", { name: "Actions" });
  await vsection.locator('tr[data-instance="create-pool #2"]').waitFor();
  await vsection.getByText("Viewers cannot run actions.").first().waitFor();
  for (const name of ["Run create-pool…", "Run rotate-api-key…", "Undo create-pool #2"])
    check(await vsection.getByRole("button", { name }).isDisabled(), `a viewer's ${name} is disabled`);
  await screen(vpage, "actions-viewer");
  await vctx.close();
  log("a viewer sees the actions disabled, with the reason");

  // Leave the stack as it came: undo the second instance too.
  await instance(2).getByRole("button", { name: "Undo create-pool #2" }).click();
  await section.getByRole("alertdialog").getByRole("button", { name: "Yes, undo create-pool #2" }).click();
  await instance(2).and(page.locator('[data-state="undone"]')).waitFor({ timeout: 90_000 });
  await page.locator(".page-head .state-deployed").waitFor({ timeout: 30_000 });
  check((await apiAs(MEMBER, "GET", `/v1/stacks/${stackId}/action-instances`)).items.length === 0, "no instance is left");
  log("undid instance #2");
}
