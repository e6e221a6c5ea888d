// Sign in by pasting the token, then make the stack web-e2e in the create form drawn from the
// template's form schema: the empty form's problems, a draft saved with what is missing, the
// first SSH key added from the form's link (a fresh lab has none), the draft filled, found
// again from the list, and a save that someone else's beat (412), reloaded and named.
// The journeys after this one go on with web-e2e.
import { expect, sshPublicKey, test } from "./fixtures";

test("sign in and make a draft", async ({ page, lab, axe }) => {
  // Sign in by pasting the token.
  await page.goto(lab.console);
  await expect(page.getByLabel("API token")).toBeVisible();
  await axe(page, "sign-in");
  await page.getByLabel("API token").fill("hzn_not-a-token");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByText("This token is not valid")).toBeVisible();
  // From the keyboard: the field, the token, Enter.
  await page.getByLabel("API token").focus();
  await page.keyboard.press("Control+A");
  await page.keyboard.type(lab.member);
  await page.keyboard.press("Enter");
  await expect(page.getByRole("heading", { name: "Stacks" })).toBeVisible();
  expect(page.url(), "the token is never in the URL").not.toContain(lab.member);
  await axe(page, "stacks-empty");

  // Create: the form drawn from the template's form schema.
  await page.getByRole("link", { name: "New stack" }).first().click();
  const db = page.locator('fieldset[data-job="db"]'),
    app = page.locator('fieldset[data-job="app"]');
  await expect(db).toBeVisible();
  await expect(page.getByRole("region", { name: /^Phase \d: / }), "one section per phase").toHaveCount(2);
  await expect(page.getByLabel("Template *"), "the single template is preselected").not.toHaveValue("");
  await expect(page.getByLabel("Team *"), "the single team is preselected").not.toHaveValue("");
  await expect(page.getByLabel("Environment *"), "the single environment is preselected").not.toHaveValue("");
  // A fresh lab (#29): no SSH key is registered, and the form says where to add one.
  await expect(db.getByLabel("SSH key *").locator("option"), "no SSH key to choose on a fresh lab").toHaveCount(1);
  await expect(
    db.locator('[data-empty="ssh_key"]').getByRole("link", { name: "Add an SSH key" }),
    "the empty key list links to adding one",
  ).toBeVisible();
  await expect(db.getByLabel("Proxmox server *"), "the single server is preselected").not.toHaveValue("");
  await expect(app.locator(".exec"), "a multiple job starts with one execution").toHaveCount(1);
  // Deploy on the empty form (#29): every required field is flagged at once, in words, and
  // the summary takes the focus.
  await page.getByRole("button", { name: "Deploy" }).click();
  const summary = page.getByTestId("error-summary");
  await expect(summary, "the error summary has the focus").toBeFocused();
  const said = (await summary.textContent()) ?? "";
  for (const w of ["Name", "db #0 · Address", "db #0 · Node", "app #0 · Address", "app #0 · Node"])
    expect(said, `the summary names ${w}`).toContain(w);
  expect(said, "no API path in the summary").not.toMatch(/jobs\.|_id/);
  await expect(db.getByLabel("Address *"), "db's address is flagged on its field").toHaveAttribute("aria-invalid", "true");
  await expect(app.getByLabel("Node *"), "app's node is flagged on its field").toHaveAttribute("aria-invalid", "true");
  await expect(page.locator("#f-labels-hint"), "the labels' hint gives their format").toContainText("Proxmox tag");
  await axe(page, "create-deploy-empty");
  await page.getByLabel("Name *").fill("web-e2e");
  await page.getByLabel("Labels").fill("e2e, web");
  // Save with what is missing: the server's problems appear on their fields.
  await page.getByRole("button", { name: "Save draft" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Draft saved" })).toBeVisible();
  await expect(db.locator(".field.has-error").first()).toBeVisible();
  await expect(db.getByLabel("Address *"), "the missing address of db is shown on its field").toHaveAttribute("aria-invalid", "true");
  await axe(page, "create-problems");
  await page.waitForURL(/#\/stacks\/[0-9a-f-]+\/edit/);
  const stackId = /stacks\/([0-9a-f-]+)\/edit/.exec(page.url())![1];
  // Follow the form's link, add a key, come back to the draft: the key is there to choose.
  await db.locator('[data-empty="ssh_key"]').getByRole("link", { name: "Add an SSH key" }).click();
  await page.getByRole("button", { name: "Add an SSH key" }).click();
  await page.getByLabel("Name *").fill("laptop");
  await page.getByLabel("Public key *").fill(sshPublicKey("operator@laptop"));
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.locator('tr[data-key="laptop"]')).toBeVisible();
  await page.goBack();
  await page.waitForURL(new RegExp(`#/stacks/${stackId}/edit$`));
  await expect(db.locator('[data-empty="ssh_key"]')).toHaveCount(0);
  await db.getByLabel("SSH key *").selectOption({ label: "laptop" });
  await app.locator(".exec").nth(0).getByLabel("SSH key *").selectOption({ label: "laptop" });
  // Fill what is asked: 1 db + 2 apps, each on its own address and node.
  await app.getByRole("button", { name: "Add machine to app" }).click();
  await expect(app.locator(".exec").nth(1).getByLabel("SSH key *"), "a new machine has the single SSH key preselected").not.toHaveValue("");
  const fill = async (scope: typeof db, i: number) => {
    await scope.getByLabel("Address *").selectOption({ index: i + 1 });
    await scope.getByLabel("Node *").selectOption(`pve${(i % 3) + 1}`);
    const pool = scope.getByLabel(/^Resource pool/);
    if (await pool.count()) await pool.selectOption("dev");
  };
  await fill(db.locator(".exec").nth(0), 0);
  await fill(app.locator(".exec").nth(0), 1);
  await fill(app.locator(".exec").nth(1), 2);
  await app.locator(".exec").nth(1).getByLabel("cores").fill("2");
  await page.getByRole("button", { name: "Save draft" }).click();
  await expect(page.getByText("Draft saved; it is ready to deploy.")).toBeVisible();
  await expect(page.locator(".field.has-error"), "no field error left").toHaveCount(0);

  // Come back to the draft from the list.
  await page.getByRole("link", { name: "Stacks" }).first().click();
  await expect(page.locator('tr[data-stack="web-e2e"]').getByText("draft")).toBeVisible();
  await page.getByRole("link", { name: "web-e2e" }).click();
  await page.getByRole("link", { name: "Edit draft" }).click();
  await expect(app.locator(".exec"), "the draft comes back with its two apps").toHaveCount(2);
  await expect(app.locator(".exec").nth(1).getByLabel("cores"), "and their answers").toHaveValue("2");
  await axe(page, "create-form");
  // Someone else saves the draft meanwhile: saving here answers 412, and the form reloads and
  // says what changed.
  const got = await fetch(`${lab.api}/v1/stacks/${stackId}`, { headers: { Authorization: `Bearer ${lab.member}` } });
  const etag = got.headers.get("ETag") ?? "";
  await got.text();
  const patched = await fetch(`${lab.api}/v1/stacks/${stackId}`, {
    method: "PATCH",
    headers: { Authorization: `Bearer ${lab.member}`, "Content-Type": "application/json", "If-Match": etag },
    body: JSON.stringify({ description: "edited by a bot" }),
  });
  expect(patched.ok, `the bot's edit: ${patched.status} ${await patched.text()}`).toBe(true);
  await page.getByRole("button", { name: "Save draft" }).click();
  await expect(page.getByText("Someone saved this draft meanwhile")).toBeVisible();
  await expect(page.getByRole("status").filter({ hasText: "meanwhile" }), "the change is named").toContainText("description");
  await expect(page.getByLabel("Description"), "the form shows their version").toHaveValue("edited by a bot");
});
