// The notifications journey (issue #31), on the lab (no stack of its own: a test message is
// what is delivered), to the receiver console_test.go runs on loopback (WEBHOOK_RECEIVER):
//   - a member adds a subscription: a URL that is not http(s) is refused on its field; then,
//     enabled, pointing at the receiver, which the lab allows;
//   - its whsec_ secret is shown once, copied, and gone after "Done"; every message the
//     receiver got is signed with it (Standard Webhooks, checked here with node:crypto);
//   - "Send test" puts a delivered test message in the delivery log, with the receiver's
//     answer; "Redeliver" adds another; a rotated secret signs the next message;
//   - an edit against a stale version answers 412, re-reads, and saves on the second try;
//   - enabling a subscription whose destination answers 503 is refused on its row (422 naming
//     enabled); it is deleted after its name is typed;
//   - a viewer sees the subscriptions and their log, and no button that changes anything;
//   - a read token is minted with its scope chosen; the list shows it, and the API holds it to it.
import { createHmac } from "node:crypto";
import { env, expect, signInLink, test } from "./fixtures";

type Message = { path: string; webhook_id: string; webhook_timestamp: string; webhook_signature: string; body: string };

/** signedWith is whether a Standard Webhooks message carries a v1 signature made with secret. */
function signedWith(m: Message, secret: string) {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const want = createHmac("sha256", key).update(`${m.webhook_id}.${m.webhook_timestamp}.${m.body}`).digest("base64");
  return m.webhook_signature.split(" ").includes(`v1,${want}`);
}

test("notifications", async ({ page, lab, api, axe, signIn }) => {
  const receiver = env("WEBHOOK_RECEIVER");
  const received = async (): Promise<Message[]> => (await fetch(`${receiver}/received`)).json();
  const me = await api(lab.member, "GET", "/v1/me");
  await page.goto(await signInLink(lab, lab.member, "#/stacks"));
  await expect(page.getByRole("heading", { name: "Stacks" })).toBeVisible();

  // Create: a wrong URL is refused on its field, then the right one, enabled (a test message
  // is sent first and the receiver answers 200).
  await page.getByRole("link", { name: "Notifications" }).click();
  await expect(page.getByRole("heading", { name: "Notifications" })).toBeVisible();
  await page.getByRole("button", { name: "Add a subscription" }).click();
  const form = page.locator("form.resource-form");
  await form.getByLabel("Name *").fill("chat-ops");
  await form.getByLabel("Team *").selectOption(me.teams[0]);
  await form.getByLabel("URL *").fill("ftp://bots.example.org/horizon");
  await expect(
    form.getByLabel("A run finished (deploy, retry, removal…, with its result)"),
    "run results are wanted by default",
  ).toBeChecked();
  await form.getByLabel("A stack changed state").check();
  await form.getByLabel("Enabled").check();
  await form.getByRole("button", { name: "Save" }).click();
  await expect(form.locator(".field.has-error").first()).toBeVisible();
  await expect(form.getByLabel("URL *"), "a URL that is not http(s) is refused on its field").toHaveAttribute("aria-invalid", "true");
  await axe(page, "notifications-url-refused");
  await form.getByLabel("URL *").fill(`${receiver}/hook`);
  await form.getByRole("button", { name: "Save" }).click();

  // The secret, once.
  await expect(page.locator('[data-secret="webhook"]'), "a whsec_ secret is shown").toHaveText(/^whsec_[A-Za-z0-9+/=]+$/);
  const secret = (await page.locator('[data-secret="webhook"]').textContent()) ?? "";
  await expect(page.getByTestId("webhook-secret").getByText("you will not see it again")).toBeVisible();
  await page.getByTestId("webhook-secret").getByRole("button", { name: "Copy" }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText()), "the secret is copied").toBe(secret);
  await axe(page, "notifications-secret");
  await page.getByRole("button", { name: "Done, hide it" }).click();
  expect(await page.content(), "the secret is not shown again").not.toContain(secret);
  const row = page.locator('tr[data-webhook="chat-ops"]');
  await expect(row.locator('[data-enabled="true"]')).toBeVisible();
  await expect(row, "the row lists the events in words").toContainText("A stack changed state");
  const verified = (await received()).filter((m) => m.path === "/hook");
  expect(verified.length, "enabling sent a message").toBeGreaterThanOrEqual(1);
  expect(
    verified.every((m) => signedWith(m, secret)),
    "signed with the shown secret",
  ).toBe(true);

  // Send test: delivered, in the log with the receiver's answer; then redelivered.
  await row.getByRole("button", { name: "Send test" }).click();
  const deliveries = page.getByRole("region", { name: "Deliveries of chat-ops" });
  const delivered = deliveries.locator('tr[data-delivery="webhook.test"][data-state="delivered"]');
  await expect(delivered.first()).toBeVisible({ timeout: 30_000 });
  const line = (await delivered.first().textContent()) ?? "";
  expect(line, "the log shows the status").toContain("HTTP 200");
  expect(line, "and the receiver's answer").toContain("received by the console's test receiver");
  expect(line, "and the latency").toMatch(/\d+ ms/);
  await expect(row.getByTestId("last-delivery").getByText("HTTP 200")).toBeVisible();
  await axe(page, "notifications-log");
  await delivered.first().getByRole("button", { name: "Redeliver" }).click();
  await expect(delivered.nth(1)).toBeVisible({ timeout: 30_000 });

  // Rotate: a new secret, shown once; the next message carries its signature.
  await row.getByRole("button", { name: "Rotate secret" }).click();
  await expect(page.locator('[data-secret="webhook"]'), "a new secret is shown after the rotation").toHaveText(/^whsec_/);
  const rotated = (await page.locator('[data-secret="webhook"]').textContent()) ?? "";
  expect(rotated, "a new secret").not.toBe(secret);
  await page.getByRole("button", { name: "Done, hide it" }).click();
  const before = (await received()).length;
  await row.getByRole("button", { name: "Send test" }).click();
  await expect(delivered.nth(2)).toBeVisible({ timeout: 30_000 });
  const after = (await received()).slice(before).filter((m) => m.path === "/hook");
  expect(after.length, "the next message was received").toBeGreaterThanOrEqual(1);
  expect(
    after.every((m) => signedWith(m, rotated)),
    "the rotated secret signs the next message",
  ).toBe(true);

  // Edit against a stale version: 412, re-read, saved on the second try.
  const hooks = (await api(lab.member, "GET", "/v1/webhooks")).items;
  const hook = hooks.find((w: { name: string }) => w.name === "chat-ops");
  await row.getByRole("button", { name: "Edit chat-ops" }).click();
  const edit = page.locator("form.resource-form");
  await edit.getByLabel("Name *").fill("chat-ops-bot");
  const bump = await fetch(`${lab.api}/v1/webhooks/${hook.id}`, {
    method: "PATCH",
    headers: { Authorization: `Bearer ${lab.member}`, "Content-Type": "application/json", "If-Match": `"${hook.version}"` },
    body: JSON.stringify({ events: ["run.finished", "stack.state_changed", "iso.built"] }),
  });
  expect(bump.ok, `the bot's change: ${bump.status} ${await bump.text()}`).toBe(true);
  await edit.getByRole("button", { name: "Save" }).click();
  await expect(edit.getByText("It changed while you were looking")).toBeVisible();
  await expect(row.getByText("An ISO was built")).toBeVisible();
  await edit.getByRole("button", { name: "Save" }).click();
  await expect(page.locator('tr[data-webhook="chat-ops-bot"]')).toBeVisible();
  const renamed = await api(lab.member, "GET", `/v1/webhooks/${hook.id}`);
  expect(renamed.name, `the second save renamed it: ${JSON.stringify(renamed)}`).toBe("chat-ops-bot");
  expect(renamed.events, "and kept the other change").toContain("iso.built");

  // Enabling a destination that refuses: 422 on the row; then deleted after typing its name.
  await api(lab.member, "POST", "/v1/webhooks", {
    team_id: me.teams[0],
    name: "refusing",
    url: `${receiver}/refuse`,
    events: ["run.finished"],
  });
  await page.reload();
  const refusing = page.locator('tr[data-webhook="refusing"]');
  await refusing.getByRole("button", { name: "Enable refusing" }).click();
  await expect(refusing.locator(".field-errors").getByText(/enabled only once its destination accepts a test message/)).toBeVisible();
  await expect(refusing.locator('[data-enabled="false"]'), "the refused subscription stays disabled").toHaveCount(1);
  await axe(page, "notifications-enable-refused");
  await refusing.getByRole("button", { name: "Delete refusing" }).click();
  const confirm = page.getByRole("alertdialog");
  await expect(confirm.getByRole("button", { name: "Yes, delete" }), "the delete waits for the name").toBeDisabled();
  await confirm.getByLabel(/Type the subscription's name/).fill("refusing");
  await confirm.getByRole("button", { name: "Yes, delete" }).click();
  await expect(refusing).toHaveCount(0);

  // A viewer reads everything and changes nothing.
  const viewer = await signIn(lab.viewer, "#/notifications");
  const vrow = viewer.locator('tr[data-webhook="chat-ops-bot"]');
  await expect(vrow).toBeVisible();
  await expect(
    viewer.getByRole("button", { name: /^(Add a subscription|Send test|Edit .*|Delete .*|Enable .*|Disable .*|Rotate secret)$/ }),
    "a viewer is offered no change",
  ).toHaveCount(0);
  await vrow.getByRole("button", { name: "Delivery log" }).click();
  await expect(
    viewer.getByRole("region", { name: "Deliveries of chat-ops-bot" }).locator('tr[data-state="delivered"]').first(),
  ).toBeVisible();
  await expect(viewer.getByRole("button", { name: "Redeliver" }), "nor redelivery").toHaveCount(0);
  await axe(viewer, "notifications-viewer");
  await viewer.context().close();

  // A read token: chosen when minting, shown in the list, held to it by the API.
  await page.getByRole("link", { name: "People" }).click();
  await page.getByRole("link", { name: "API tokens" }).click();
  await page.getByRole("button", { name: "Mint a token" }).click();
  const mint = page.locator("form.resource-form");
  await mint.getByLabel("Name *").fill("chat-ops-reader");
  await expect(mint.getByLabel("Scope *"), "full is the default scope").toHaveValue("full");
  const offered = await mint.getByLabel("Scope *").locator("option").allTextContents();
  for (const s of ["Full —", "Deploy —", "Read —", "Prometheus —"])
    expect(
      offered.some((o) => o.startsWith(s)),
      `the scope ${s} is offered with its line: ${offered}`,
    ).toBe(true);
  await mint.getByLabel("Scope *").selectOption("read");
  await page.getByRole("button", { name: "Mint", exact: true }).click();
  const token = (await page.locator('[data-token="minted"]').textContent()) ?? "";
  await page.getByRole("button", { name: "Done, hide it" }).click();
  await expect(page.locator('tr[data-token-name="chat-ops-reader"]').getByText("read", { exact: true })).toBeVisible();
  const as = async (method: string, path: string) =>
    (await fetch(`${lab.api}${path}`, { method, headers: { Authorization: `Bearer ${token}`, "Idempotency-Key": crypto.randomUUID() } }))
      .status;
  expect(await as("GET", `/v1/webhooks/${hook.id}/deliveries`), "the read token reads the log").toBe(200);
  expect(await as("POST", `/v1/webhooks/${hook.id}/test`), "and may not send a test").toBe(403);
  await axe(page, "people-tokens-scopes");
});
