// The notifications journey (issue #31), called by run.mjs with its member's page, on the lab
// it already runs (no stack of its own: a test message is what is delivered):
//   - a member adds a subscription: a URL that is not http(s) is refused on its field; then,
//     enabled, pointing at the receiver the Go test runs on loopback, which the lab allows;
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
import { signInLink } from "./signin.mjs";

/** signedWith is whether a Standard Webhooks message carries a v1 signature made with secret. */
function signedWith(m, secret) {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const want = createHmac("sha256", key).update(`${m.webhook_id}.${m.webhook_timestamp}.${m.body}`).digest("base64");
  return m.webhook_signature.split(" ").includes(`v1,${want}`);
}

/**
 * @param {object} o
 * @param {import("playwright-core").Browser} o.browser
 * @param {import("playwright-core").Page} o.page a member's page, signed in
 */
export async function notificationsJourney({ browser, page, CONSOLE, API, MEMBER, VIEWER, RECEIVER, apiAs, screen, check, log }) {
  const received = async () => (await fetch(`${RECEIVER}/received`)).json();
  const me = await apiAs(MEMBER, "GET", "/v1/me");

  // Create: a wrong URL is refused on its field, then the right one, enabled (a test message
  // is sent first and the receiver answers 200).
  await page.getByRole("link", { name: "Notifications" }).click();
  await page.getByRole("heading", { name: "Notifications" }).waitFor();
  await page.getByRole("button", { name: "Add a subscription" }).click();
  const form = page.locator("form.resource-form");
  await form.getByLabel("Name *").fill("chat-ops");
  await form.getByLabel("Team *").selectOption(me.teams[0]);
  await form.getByLabel("URL *").fill("ftp://bots.example.org/horizon");
  check(
    await form.getByLabel("A run finished (deploy, retry, removal…, with its result)").isChecked(),
    "run results are wanted by default",
  );
  await form.getByLabel("A stack changed state").check();
  await form.getByLabel("Enabled").check();
  await form.getByRole("button", { name: "Save" }).click();
  await form.locator(".field.has-error").first().waitFor();
  check((await form.getByLabel("URL *").getAttribute("aria-invalid")) === "true", "a URL that is not http(s) is refused on its field");
  await screen(page, "notifications-url-refused");
  await form.getByLabel("URL *").fill(`${RECEIVER}/hook`);
  await form.getByRole("button", { name: "Save" }).click();

  // The secret, once.
  const secret = await page.locator('[data-secret="webhook"]').textContent();
  check(/^whsec_[A-Za-z0-9+/=]+$/.test(secret), `a whsec_ secret is shown: ${secret.slice(0, 8)}…`);
  await page.getByTestId("webhook-secret").getByText("you will not see it again").waitFor();
  await page.getByTestId("webhook-secret").getByRole("button", { name: "Copy" }).click();
  check((await page.evaluate(() => navigator.clipboard.readText())) === secret, "the secret is copied");
  await screen(page, "notifications-secret");
  await page.getByRole("button", { name: "Done, hide it" }).click();
  check(!(await page.content()).includes(secret), "the secret is not shown again");
  const row = page.locator('tr[data-webhook="chat-ops"]');
  await row.locator('[data-enabled="true"]').waitFor();
  check((await row.textContent()).includes("A stack changed state"), "the row lists the events in words");
  const verified = (await received()).filter((m) => m.path === "/hook");
  check(
    verified.length >= 1 && verified.every((m) => signedWith(m, secret)),
    `enabling sent a message signed with the shown secret (${verified.length})`,
  );
  log("added an enabled subscription; its secret was shown once and signs what the receiver got");

  // Send test: delivered, in the log with the receiver's answer; then redelivered.
  await row.getByRole("button", { name: "Send test" }).click();
  const deliveries = page.getByRole("region", { name: "Deliveries of chat-ops" });
  const delivered = deliveries.locator('tr[data-delivery="webhook.test"][data-state="delivered"]');
  await delivered.first().waitFor({ timeout: 30_000 });
  const line = await delivered.first().textContent();
  check(
    line.includes("HTTP 200") && line.includes("received by the console's test receiver") && /\d+ ms/.test(line),
    `the log shows status, latency and answer: ${line}`,
  );
  await row.getByTestId("last-delivery").getByText("HTTP 200").waitFor();
  await screen(page, "notifications-log");
  await delivered.first().getByRole("button", { name: "Redeliver" }).click();
  await delivered.nth(1).waitFor({ timeout: 30_000 });
  log("sent a test message and redelivered it; both are delivered in the log");

  // Rotate: a new secret, shown once; the next message carries its signature.
  await row.getByRole("button", { name: "Rotate secret" }).click();
  const rotated = await page.locator('[data-secret="webhook"]').textContent();
  check(/^whsec_/.test(rotated) && rotated !== secret, "a new secret is shown after the rotation");
  await page.getByRole("button", { name: "Done, hide it" }).click();
  const before = (await received()).length;
  await row.getByRole("button", { name: "Send test" }).click();
  await delivered.nth(2).waitFor({ timeout: 30_000 });
  const after = (await received()).slice(before).filter((m) => m.path === "/hook");
  check(after.length >= 1 && after.every((m) => signedWith(m, rotated)), "the rotated secret signs the next message");
  log("rotated the secret; the new one signs");

  // Edit against a stale version: 412, re-read, saved on the second try.
  const hooks = (await apiAs(MEMBER, "GET", "/v1/webhooks")).items;
  const hook = hooks.find((w) => w.name === "chat-ops");
  await row.getByRole("button", { name: "Edit chat-ops" }).click();
  const edit = page.locator("form.resource-form");
  await edit.getByLabel("Name *").fill("chat-ops-bot");
  const bump = await fetch(`${API}/v1/webhooks/${hook.id}`, {
    method: "PATCH",
    headers: { Authorization: `Bearer ${MEMBER}`, "Content-Type": "application/json", "If-Match": `"${hook.version}"` },
    body: JSON.stringify({ events: ["run.finished", "stack.state_changed", "iso.built"] }),
  });
  check(bump.ok, `the bot's change: ${bump.status} ${await bump.text()}`);
  await edit.getByRole("button", { name: "Save" }).click();
  await edit.getByText("It changed while you were looking").waitFor();
  await row.getByText("An ISO was built").waitFor();
  await edit.getByRole("button", { name: "Save" }).click();
  await page.locator('tr[data-webhook="chat-ops-bot"]').waitFor();
  const renamed = await apiAs(MEMBER, "GET", `/v1/webhooks/${hook.id}`);
  check(
    renamed.name === "chat-ops-bot" && renamed.events.includes("iso.built"),
    `the second save kept the other change: ${JSON.stringify(renamed)}`,
  );
  log("an edit against a stale version was refused, re-read, and saved");

  // Enabling a destination that refuses: 422 on the row; then deleted after typing its name.
  await apiAs(MEMBER, "POST", "/v1/webhooks", {
    team_id: me.teams[0],
    name: "refusing",
    url: `${RECEIVER}/refuse`,
    events: ["run.finished"],
  });
  await page.reload();
  const refusing = page.locator('tr[data-webhook="refusing"]');
  await refusing.getByRole("button", { name: "Enable refusing" }).click();
  await refusing
    .locator(".field-errors")
    .getByText(/enabled only once its destination accepts a test message/)
    .waitFor();
  check((await refusing.locator('[data-enabled="false"]').count()) === 1, "the refused subscription stays disabled");
  await screen(page, "notifications-enable-refused");
  await refusing.getByRole("button", { name: "Delete refusing" }).click();
  const confirm = page.getByRole("alertdialog");
  check(await confirm.getByRole("button", { name: "Yes, delete" }).isDisabled(), "the delete waits for the name");
  await confirm.getByLabel(/Type the subscription's name/).fill("refusing");
  await confirm.getByRole("button", { name: "Yes, delete" }).click();
  await refusing.waitFor({ state: "detached" });
  log("enabling a refusing destination was refused on its row; deleted after typing its name");

  // A viewer reads everything and changes nothing.
  const vctx = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  const viewer = await vctx.newPage();
  viewer.setDefaultTimeout(20_000);
  await viewer.goto(await signInLink(CONSOLE, API, VIEWER, "#/notifications"));
  const vrow = viewer.locator('tr[data-webhook="chat-ops-bot"]');
  await vrow.waitFor();
  check(
    (await viewer
      .getByRole("button", { name: /^(Add a subscription|Send test|Edit .*|Delete .*|Enable .*|Disable .*|Rotate secret)$/ })
      .count()) === 0,
    "a viewer is offered no change",
  );
  await vrow.getByRole("button", { name: "Delivery log" }).click();
  await viewer.getByRole("region", { name: "Deliveries of chat-ops-bot" }).locator('tr[data-state="delivered"]').first().waitFor();
  check((await viewer.getByRole("button", { name: "Redeliver" }).count()) === 0, "nor redelivery");
  await screen(viewer, "notifications-viewer");
  await vctx.close();
  log("a viewer reads the subscriptions and their log, with no button");

  // A read token: chosen when minting, shown in the list, held to it by the API.
  await page.getByRole("link", { name: "People" }).click();
  await page.getByRole("link", { name: "API tokens" }).click();
  await page.getByRole("button", { name: "Mint a token" }).click();
  const mint = page.locator("form.resource-form");
  await mint.getByLabel("Name *").fill("chat-ops-reader");
  check((await mint.getByLabel("Scope *").inputValue()) === "full", "full is the default scope");
  const offered = await mint.getByLabel("Scope *").locator("option").allTextContents();
  check(
    ["Full —", "Deploy —", "Read —", "Prometheus —"].every((s) => offered.some((o) => o.startsWith(s))),
    `each scope is offered with its line: ${offered}`,
  );
  await mint.getByLabel("Scope *").selectOption("read");
  await page.getByRole("button", { name: "Mint", exact: true }).click();
  const token = await page.locator('[data-token="minted"]').textContent();
  await page.getByRole("button", { name: "Done, hide it" }).click();
  await page.locator('tr[data-token-name="chat-ops-reader"]').getByText("read", { exact: true }).waitFor();
  const as = async (method, path) =>
    (await fetch(`${API}${path}`, { method, headers: { Authorization: `Bearer ${token}`, "Idempotency-Key": crypto.randomUUID() } }))
      .status;
  check((await as("GET", `/v1/webhooks/${hook.id}/deliveries`)) === 200, "the read token reads the log");
  check((await as("POST", `/v1/webhooks/${hook.id}/test`)) === 403, "and may not send a test");
  await screen(page, "people-tokens-scopes");
  log("minted a read token; its scope is listed and holds");
}
