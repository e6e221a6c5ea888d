// The console's end-to-end scenario in real Chromium (playwright-core driving Debian's
// chromium) against a real Horizon that deploy/web/console_test.go starts: API, workers,
// Terraform and the Proxmox sandbox. Nothing is mocked. Screenshots of each screen go to
// OUT_DIR; axe-core checks each screen for serious or critical violations.
//
// Env: CONSOLE_URL, API_URL, ADMIN_TOKEN, MEMBER_TOKEN, VIEWER_TOKEN, HANG_FILE, OUT_DIR, CHROMIUM,
// NODE_KEY_FILE and PVE_TOKEN_SECRET (to register the sandbox's cluster again, by hand), and
// WEBHOOK_RECEIVER (the notifications journey's destination, see notify.mjs).
import { chromium } from "playwright-core";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { createHash, generateKeyPairSync } from "node:crypto";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { join } from "node:path";
import { isoDay2 } from "./day2.mjs";
import { actionsJourney } from "./actions.mjs";
import { quotaJourney } from "./quota.mjs";
import { signInLink } from "./signin.mjs";
import { notificationsJourney } from "./notify.mjs";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const CONSOLE = env("CONSOLE_URL"),
  API = env("API_URL"),
  MEMBER = env("MEMBER_TOKEN"),
  VIEWER = env("VIEWER_TOKEN"),
  ADMIN = env("ADMIN_TOKEN");
const HANG = env("HANG_FILE"),
  OUT = env("OUT_DIR"),
  RECEIVER = env("WEBHOOK_RECEIVER");
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const t0 = Date.now();
const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
function check(cond, msg) {
  if (!cond) throw new Error(`check failed: ${msg}`);
}

async function apiAs(token, method, path, body) {
  const r = await fetch(API + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

let shots = 0;
async function screen(page, name) {
  await page.screenshot({ path: join(OUT, `${String(++shots).padStart(2, "0")}-${name}.png`), fullPage: true });
  await page.evaluate(axeSource);
  const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = res.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  check(
    bad.length === 0,
    `axe on ${name}: ${bad
      .map(
        (v) =>
          `${v.id} (${v.impact}): ${v.nodes
            .slice(0, 3)
            .map((n) => n.target.join(" "))
            .join(", ")}`,
      )
      .join("; ")}`,
  );
  log(`screen ${name}: screenshot saved, axe clean`);
}

const browser = await chromium.launch({
  executablePath: env("CHROMIUM"),
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
try {
  const ctx = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  await ctx.grantPermissions(["clipboard-read", "clipboard-write"], { origin: CONSOLE });
  const page = await ctx.newPage();
  page.setDefaultTimeout(20_000);
  const hosts = new Set();
  page.on("request", (r) => hosts.add(new URL(r.url()).origin));
  page.on("pageerror", (e) => log("page error:", e.message));
  let navigations = 0;
  page.on("framenavigated", (f) => {
    if (f === page.mainFrame()) navigations++;
  });

  // Sign in by pasting the token.
  await page.goto(CONSOLE);
  await page.getByLabel("API token").waitFor();
  await screen(page, "sign-in");
  await page.getByLabel("API token").fill("hzn_not-a-token");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText("This token is not valid").waitFor();
  // From the keyboard: the field, the token, Enter.
  await page.getByLabel("API token").focus();
  await page.keyboard.press("Control+A");
  await page.keyboard.type(MEMBER);
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Stacks" }).waitFor();
  check(!page.url().includes(MEMBER), "the token is never in the URL");
  await screen(page, "stacks-empty");

  // Create: the form drawn from the template's form schema.
  await page.getByRole("link", { name: "New stack" }).first().click();
  const db = page.locator('fieldset[data-job="db"]'),
    app = page.locator('fieldset[data-job="app"]');
  await db.waitFor();
  check((await page.getByRole("region", { name: /^Phase \d: / }).count()) === 2, "one section per phase");
  check((await page.getByLabel("Template *").inputValue()) !== "", "the single template is preselected");
  check((await page.getByLabel("Team *").inputValue()) !== "", "the single team is preselected");
  check((await page.getByLabel("Environment *").inputValue()) !== "", "the single environment is preselected");
  // A fresh lab (#29): no SSH key is registered, and the form says where to add one.
  check((await db.getByLabel("SSH key *").locator("option").count()) === 1, "no SSH key to choose on a fresh lab");
  check(
    await db.locator('[data-empty="ssh_key"]').getByRole("link", { name: "Add an SSH key" }).isVisible(),
    "the empty key list links to adding one",
  );
  check((await db.getByLabel("Proxmox server *").inputValue()) !== "", "the single server is preselected");
  check((await app.locator(".exec").count()) === 1, "a multiple job starts with one execution");
  // Deploy on the empty form (#29): every required field is flagged at once, in words, and
  // the summary takes the focus.
  await page.getByRole("button", { name: "Deploy" }).click();
  const summary = page.getByTestId("error-summary");
  await summary.waitFor();
  check(await summary.evaluate((el) => el === document.activeElement), "the error summary has the focus");
  const said = await summary.textContent();
  for (const w of ["Name", "db #0 · Address", "db #0 · Node", "app #0 · Address", "app #0 · Node"])
    check(said.includes(w), `the summary names ${w}: ${said}`);
  check(!said.includes("jobs.") && !said.includes("_id"), `no API path in the summary: ${said}`);
  check((await db.getByLabel("Address *").getAttribute("aria-invalid")) === "true", "db's address is flagged on its field");
  check((await app.getByLabel("Node *").getAttribute("aria-invalid")) === "true", "app's node is flagged on its field");
  check(/Proxmox tag/.test(await page.locator("#f-labels-hint").textContent()), "the labels' hint gives their format");
  await screen(page, "create-deploy-empty");
  await page.getByLabel("Name *").fill("web-e2e");
  await page.getByLabel("Labels").fill("e2e, web");
  // Save with what is missing: the server's problems appear on their fields.
  await page.getByRole("button", { name: "Save draft" }).click();
  await page.getByRole("status").filter({ hasText: "Draft saved" }).waitFor();
  await db.locator(".field.has-error").first().waitFor();
  const dbAddrErr = await db.getByLabel("Address *").getAttribute("aria-invalid");
  check(dbAddrErr === "true", "the missing address of db is shown on its field");
  await screen(page, "create-problems");
  await page.waitForURL(/#\/stacks\/[0-9a-f-]+\/edit/);
  const stackId = /stacks\/([0-9a-f-]+)\/edit/.exec(page.url())[1];
  // Follow the form's link, add a key, come back to the draft: the key is there to choose.
  await db.locator('[data-empty="ssh_key"]').getByRole("link", { name: "Add an SSH key" }).click();
  await page.getByRole("button", { name: "Add an SSH key" }).click();
  await page.getByLabel("Name *").fill("laptop");
  await page.getByLabel("Public key *").fill(sshPublicKey("operator@laptop"));
  await page.getByRole("button", { name: "Save" }).click();
  await page.locator('tr[data-key="laptop"]').waitFor();
  await page.goBack();
  await page.waitForURL(new RegExp(`#/stacks/${stackId}/edit$`));
  await db.locator('[data-empty="ssh_key"]').waitFor({ state: "detached" });
  await db.getByLabel("SSH key *").selectOption({ label: "laptop" });
  await app.locator(".exec").nth(0).getByLabel("SSH key *").selectOption({ label: "laptop" });
  log("added the first SSH key from the form's link and came back to the draft");
  // Fill what is asked: 1 db + 2 apps, each on its own address and node.
  await app.getByRole("button", { name: "Add machine to app" }).click();
  check(
    (await app.locator(".exec").nth(1).getByLabel("SSH key *").inputValue()) !== "",
    "a new machine has the single SSH key preselected",
  );
  const fill = async (scope, i) => {
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
  await page.getByText("Draft saved; it is ready to deploy.").waitFor();
  check((await page.locator(".field.has-error").count()) === 0, "no field error left");

  // Come back to the draft from the list.
  await page.getByRole("link", { name: "Stacks" }).first().click();
  await page.locator('tr[data-stack="web-e2e"]').getByText("draft").waitFor();
  await page.getByRole("link", { name: "web-e2e" }).click();
  await page.getByRole("link", { name: "Edit draft" }).click();
  await app.locator(".exec").nth(1).waitFor();
  check((await app.locator(".exec").count()) === 2, "the draft comes back with its two apps");
  check((await app.locator(".exec").nth(1).getByLabel("cores").inputValue()) === "2", "and their answers");
  await screen(page, "create-form");
  // Someone else saves the draft meanwhile: saving here answers 412, and the form reloads and
  // says what changed.
  const got = await fetch(`${API}/v1/stacks/${stackId}`, { headers: { Authorization: `Bearer ${MEMBER}` } });
  const etag = got.headers.get("ETag");
  await got.text();
  const patched = await fetch(`${API}/v1/stacks/${stackId}`, {
    method: "PATCH",
    headers: { Authorization: `Bearer ${MEMBER}`, "Content-Type": "application/json", "If-Match": etag },
    body: JSON.stringify({ description: "edited by a bot" }),
  });
  check(patched.ok, `the bot's edit: ${patched.status} ${await patched.text()}`);
  await page.getByRole("button", { name: "Save draft" }).click();
  await page.getByText("Someone saved this draft meanwhile").waitFor();
  check((await page.getByRole("status").filter({ hasText: "meanwhile" }).textContent()).includes("description"), "the change is named");
  check((await page.getByLabel("Description").inputValue()) === "edited by a bot", "the form shows their version");
  log("a concurrent edit was reloaded and named");

  // Deploy, then watch the cards turn green without reloading.
  const before = navigations;
  await page.getByRole("button", { name: "Deploy" }).click();
  await page.waitForURL(new RegExp(`#/stacks/${stackId}$`));
  await page.locator(".card").first().waitFor();
  await page.getByRole("listitem", { name: "Phase 2: application" }).waitFor();
  check((await page.getByRole("listitem", { name: /^Phase \d/ }).count()) === 2, "a column per phase");
  // Pause while the deploy writes its log: new lines are counted, not shown.
  await page.locator(".log-lines .line").first().waitFor({ timeout: 60_000 });
  await page.getByRole("button", { name: "Pause" }).click();
  await page.getByRole("button", { name: /^\d+ new lines$/ }).waitFor({ timeout: 60_000 });
  await screen(page, "detail-deploying");
  await page.getByRole("button", { name: /^\d+ new lines$/ }).focus();
  await page.keyboard.press("Enter"); // resumes, from the keyboard
  await page.locator(".page-head .state-deployed").waitFor({ timeout: 150_000 });
  const states = await page.locator(".card").evaluateAll((cs) => cs.map((c) => c.getAttribute("data-state")));
  check(states.length === 3 && states.every((s) => s === "succeeded"), `three green cards, got ${states}`);
  check(navigations - before <= 2, `no reload while deploying (${navigations - before} navigations)`);
  log("deployed; cards:", states.join(","));

  // Filter the log by job (on the server) and search in it.
  await page.getByRole("toolbar", { name: "Log" }).getByLabel("Job").selectOption("app");
  await page.waitForFunction(() => {
    const ls = [...document.querySelectorAll(".log-lines .line")];
    return ls.length > 0 && ls.every((l) => l.getAttribute("data-job") === "app");
  });
  // Or by one machine (#29): its lines alone, each with its time.
  await page.getByRole("toolbar", { name: "Log" }).getByLabel("Job").selectOption("app/1");
  await page.waitForFunction(() => {
    const ls = [...document.querySelectorAll(".log-lines .line")];
    return ls.length > 0 && ls.every((l) => l.querySelector(".lj")?.textContent === "app#1");
  });
  check(/^\d\d:\d\d:\d\d$/.test(await page.locator(".log-lines .line .lts").first().textContent()), "a line says when it was written");
  // Each step's lines are a section under a header whose button folds and unfolds them (#29):
  // folded, the next row under the header is the next section's header (or nothing).
  await page.locator(".log-lines").evaluate((el) => {
    el.scrollTop = 0;
  });
  await page.waitForFunction(() =>
    [...document.querySelectorAll(".log-lines > div > *")].some((e) => e.style.transform === "translateY(0px)"),
  );
  const stepHead = page.locator(".log-lines .log-step").first().getByRole("button");
  check((await stepHead.getAttribute("aria-expanded")) === "true", "a step's section starts unfolded");
  const rowUnder = () =>
    page.evaluate(() => {
      const r = [...document.querySelectorAll(".log-lines > div > *")].find((e) => e.style.transform === "translateY(18px)");
      return r ? r.className.split(" ")[0] : "";
    });
  check((await rowUnder()) === "line", "an unfolded section's lines are under its header");
  await stepHead.click();
  await page.waitForFunction(() => document.querySelector(".log-lines .log-step button")?.getAttribute("aria-expanded") === "false");
  check((await rowUnder()) !== "line", "a folded section is its header alone");
  await stepHead.click();
  await page.waitForFunction(() => document.querySelector(".log-lines .log-step button")?.getAttribute("aria-expanded") === "true");
  check((await rowUnder()) === "line", "and unfolds again");
  log(`folded and unfolded the section "${await stepHead.textContent()}"`);
  await page.getByRole("toolbar", { name: "Log" }).getByLabel("Job").selectOption("app");
  await page.waitForFunction(() => [...document.querySelectorAll(".log-lines .line .lj")].some((l) => l.textContent === "app#0"));
  await page.getByRole("toolbar", { name: "Log" }).getByLabel("Search").fill("warming up");
  await page.getByText(/^\d+ found/).waitFor();
  await screen(page, "detail-deployed");
  // Download the (filtered) log through a link: it lands on disk with the app's lines only.
  const [dl] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download" }).click()]);
  const text = readFileSync(await dl.path(), "utf8");
  check(
    text.includes("warming up the app: step 20 of 20") && !text.includes("apply of db"),
    `the download holds app's log only:\n${text.slice(0, 400)}`,
  );
  log(`downloaded the log: ${text.split("\n").length} lines`);

  // Copy a secret: the clipboard holds it, the page never shows it.
  const row = page.locator('tr[data-output="app#0.api_key"]');
  await row.getByRole("button", { name: "Copy api_key" }).click();
  await row.getByText("Copied").waitFor();
  // "Copied" clears after a few seconds (#29).
  await row.getByText("Copied").waitFor({ state: "detached", timeout: 10_000 });
  const clip = await page.evaluate(() => navigator.clipboard.readText());
  const outputs = await apiAs(MEMBER, "POST", `/v1/stacks/${stackId}/outputs/app/0/api_key/reveal`);
  check(clip === outputs.value && clip.length > 8, "the clipboard holds the secret");
  check(!(await page.content()).includes(clip), "the page never showed the secret");
  await row.getByRole("button", { name: "Reveal api_key" }).click();
  await row.getByText(clip).waitFor();
  log("secret copied without showing it, then revealed");

  // A viewer sees no write button.
  const vctx = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  const vpage = await vctx.newPage();
  vpage.setDefaultTimeout(20_000);
  // The viewer signs in by a link, as `go tool task up` prints one: it carries a one-time
  // code, never the token, wiped from the address bar; the same link a second time signs
  // nobody in, and an old #token= link is refused.
  const viewerLink = await signInLink(CONSOLE, API, VIEWER);
  await vpage.goto(viewerLink);
  await vpage.getByRole("heading", { name: "Stacks" }).waitFor();
  check(!vpage.url().includes("code="), "the code is wiped from the address bar");
  {
    const again = await (await browser.newContext()).newPage();
    await again.goto(viewerLink);
    await again.getByText("This sign-in code is unknown, used or expired").waitFor();
    check(!again.url().includes("code="), "a spent code is wiped too");
    await again.context().close();
    const old = await (await browser.newContext()).newPage();
    await old.goto(`${CONSOLE}/#token=${VIEWER}`);
    await old.getByText("This sign-in link is no longer accepted").waitFor();
    check(!old.url().includes(VIEWER), "an old token link is wiped and not honoured");
    await old.context().close();
  }
  await vpage.getByRole("link", { name: "web-e2e" }).click();
  await vpage.locator(".card").first().waitFor();
  await vpage.locator(".card").nth(2).waitFor();
  const writes = await vpage.getByRole("button", { name: /^(Deploy|Cancel run|Remove|Duplicate|Run again: .*|Edit draft)$/ }).count();
  check(writes === 0, `a viewer sees no write button (saw ${writes})`);
  check((await vpage.locator("summary", { hasText: "Retry" }).count()) === 0, "a viewer sees no retry menu");
  check((await vpage.getByRole("link", { name: "New stack" }).count()) === 0, "a viewer is not offered New stack");
  await screen(vpage, "viewer-detail");
  // The viewer now watches the list: it must follow the member's runs live.
  await vpage.getByRole("link", { name: "Stacks" }).first().click();
  await vpage.locator('tr[data-stack="web-e2e"]').getByText("deployed").waitFor();
  let viewerNavs = 0;
  vpage.on("framenavigated", (f) => {
    if (f === vpage.mainFrame()) viewerNavs++;
  });

  // Run one card again: a run of that execution only.
  await page.getByRole("button", { name: "Run again: app #1" }).click();
  await page.locator('h2 [data-run-kind="run_again"]').waitFor({ timeout: 30_000 });
  check(!(await page.locator("h2", { hasText: "Pipeline" }).textContent()).includes("run_again"), "the run's kind is said in words");
  await page.locator(".page-head .state-deployed").waitFor({ timeout: 90_000 });
  await page.waitForFunction(() => document.querySelector('.card[data-card="app #1"]')?.getAttribute("data-state") === "succeeded");
  log("ran app #1 again");

  // Cancel a hung run, then retry the failed jobs.
  writeFileSync(HANG, "hang");
  await page.getByRole("button", { name: "Run again: app #1" }).click();
  await page.getByText("waiting for the license server").first().waitFor({ timeout: 60_000 });
  await page.getByRole("button", { name: "Cancel run" }).click();
  await screen(page, "detail-cancel-confirm");
  await page.getByRole("button", { name: "Yes, cancel the run" }).click();
  await page.locator(".page-head .state-failed").waitFor({ timeout: 60_000 });
  rmSync(HANG);
  log("canceled the hung run");
  // A member is offered no force-remove; an admin is, with what would be left behind.
  check((await page.getByRole("button", { name: "Force-remove" }).count()) === 0, "a member is not offered Force-remove");
  const actx = await browser.newContext({ viewport: { width: 1360, height: 900 }, acceptDownloads: true });
  const apage = await actx.newPage();
  apage.setDefaultTimeout(20_000);
  apage.on("request", (r) => hosts.add(new URL(r.url()).origin));
  await apage.goto(await signInLink(CONSOLE, API, ADMIN, `#/stacks/${stackId}`));
  await apage.getByRole("button", { name: "Force-remove" }).click();
  const force = apage.getByRole("alertdialog");
  await force.locator("tr[data-vm]").nth(2).waitFor();
  check((await force.locator("tr[data-vm]").count()) === 3, "the three VMs that would be left behind are listed");
  check(await force.getByRole("button", { name: "Yes, force-remove" }).isDisabled(), "force-remove waits for the name");
  await screen(apage, "detail-force-remove-confirm");
  const [mdl] = await Promise.all([
    apage.waitForEvent("download"),
    force.getByRole("button", { name: "Download the abandon manifest" }).click(),
  ]);
  const manifest = JSON.parse(readFileSync(await mdl.path(), "utf8"));
  check(
    manifest.stack_id === stackId && manifest.vms.length === 3 && manifest.addresses.length === 3,
    `the manifest lists the VMs and addresses: ${JSON.stringify(manifest).slice(0, 300)}`,
  );
  await force.getByRole("button", { name: "No" }).click();
  await actx.close();
  log("force-remove previewed by an admin: 3 VMs listed, manifest downloaded, not confirmed");
  await vpage.locator('tr[data-stack="web-e2e"]').getByText("failed").waitFor();
  check(viewerNavs === 0, "the list turned failed without a reload");
  log("the viewer's list turned failed live");
  await vctx.close();
  await page.locator("summary", { hasText: "Retry" }).click();
  await screen(page, "detail-retry-menu");
  // The menu closes on Escape and on a click outside it (#29).
  const menuOpen = () => page.locator("details.menu").evaluate((d) => d.open);
  await page.keyboard.press("Escape");
  check(!(await menuOpen()), "Escape closes the Retry menu");
  await page.locator("summary", { hasText: "Retry" }).click();
  check(await menuOpen(), "the Retry menu opens again");
  await page.locator("h1").click();
  check(!(await menuOpen()), "a click outside closes the Retry menu");
  await page.locator("summary", { hasText: "Retry" }).click();
  await page.getByRole("menuitem", { name: "Retry failed jobs" }).click();
  await page.locator('h2 [data-run-kind="retry"]').waitFor({ timeout: 30_000 });
  await page.locator(".page-head .state-deployed").waitFor({ timeout: 90_000 });
  log("retried the failed jobs: deployed again");

  // The history names who acted.
  const me = await apiAs(MEMBER, "GET", "/v1/me");
  await page.getByRole("table", { name: "State changes" }).getByRole("cell", { name: me.name, exact: true }).first().waitFor();
  // A run's end is Horizon's doing, not the member's (#29); the runs say who, when each ended
  // and how long it took.
  await page.getByRole("table", { name: "State changes" }).getByRole("cell", { name: "Horizon", exact: true }).first().waitFor();
  const firstRun = page.getByRole("table", { name: "Runs" }).locator("tbody tr").first();
  await firstRun.locator("td").nth(4).filter({ hasText: /\S/ }).waitFor();
  const retryRow = await firstRun.locator("td").allTextContents();
  check(
    retryRow[0] === "retry" && retryRow[1] === me.name && retryRow[4] !== "" && /^\d+(s|m \d\ds)$/.test(retryRow[5]),
    `the retry's row: ${retryRow}`,
  );
  // An older run's log is that run's alone, not followed into the later ones.
  const runList = (await apiAs(MEMBER, "GET", `/v1/stacks/${stackId}/runs?limit=20`)).items;
  const deployRun = runList.find((r) => r.kind === "deploy");
  const deployLines = (
    await (
      await fetch(`${API}/v1/stacks/${stackId}/logs?run=${deployRun.id}`, {
        headers: { Authorization: `Bearer ${MEMBER}`, Accept: "application/x-ndjson" },
      })
    ).text()
  )
    .trim()
    .split("\n").length;
  await page.getByRole("table", { name: "Runs" }).getByRole("link", { name: "deploy", exact: true }).click();
  await page.locator('h2 [data-run-kind="deploy"]').waitFor();
  // The chosen run is shown where its pipeline starts (#29), not at the bottom of the page.
  await page.waitForFunction(() => {
    const r = document.getElementById("pipeline")?.getBoundingClientRect();
    return !!r && r.top >= -1 && r.top < innerHeight / 2;
  });
  await page.waitForFunction((n) => document.querySelector(".log-tools [aria-live]")?.textContent?.startsWith(`${n} lines`), deployLines);
  log(`the deploy run's log alone: ${deployLines} lines`);
  // A line's link opens its run's log scrolled to it, also when loaded afresh (the token is
  // kept per tab, so the same tab loads it). The run's log is complete (counted above) and the
  // view is paused, so no row moves between where the click aims and where it lands: one click.
  await page.getByRole("toolbar", { name: "Log" }).getByRole("button", { name: "Pause" }).click();
  await page.locator(".log-lines .line .ln").nth(3).click();
  await page.waitForFunction(() => location.hash.includes("line="), null, { timeout: 5_000 });
  await page.locator(".log-lines .line.linked").waitFor();
  // Read after the click: the virtualised rows may have moved between a read and a click.
  const lineNo = await page.locator(".log-lines .line.linked .ln").textContent();
  const linked = page.url();
  await page.goto(`${CONSOLE}/#/stacks`);
  await page.getByRole("heading", { name: "Stacks" }).waitFor();
  await page.goto(linked);
  await page.locator(".log-lines .line.linked").waitFor();
  check((await page.locator(".log-lines .line.linked .ln").textContent()) === lineNo, "the linked line is the one clicked");
  check(await page.locator(".log-lines .line.linked").isVisible(), "and it is scrolled into view");
  log(`line ${lineNo}'s link opens it`);
  // Offline: a banner while the connection is lost, gone when it is back.
  await ctx.setOffline(true);
  await page.getByText("Connection to Horizon lost").waitFor({ timeout: 30_000 });
  await screen(page, "detail-offline");
  await ctx.setOffline(false);
  await page.getByText("Connection to Horizon lost").waitFor({ state: "detached", timeout: 30_000 });
  log("the offline banner came and went");

  // The list shows it, live.
  await page.getByRole("link", { name: "Stacks" }).first().click();
  await page.locator('tr[data-stack="web-e2e"]').getByText("deployed").waitFor();
  await screen(page, "stacks-list");

  // From the keyboard alone: Tab to the stack, open it, Tab to the log's Pause, press it, then
  // open the Retry menu's first item from the keyboard too.
  const tabTo = async (what, test) => {
    // The log's section headers are buttons too: up to ~40 of them are drawn.
    for (let i = 0; i < 200; i++) {
      await page.keyboard.press("Tab");
      if (await page.evaluate(test)) return;
    }
    throw new Error(`check failed: Tab never reached ${what}`);
  };
  await page.locator("body").focus();
  await tabTo("the stack's link", () => document.activeElement?.textContent === "web-e2e");
  await page.keyboard.press("Enter");
  await page.locator(".card").first().waitFor();
  await tabTo("Pause", () => document.activeElement?.textContent === "Pause");
  await page.keyboard.press("Enter");
  await page.getByRole("button", { name: "Resume" }).waitFor();
  await tabTo("Resume", () => document.activeElement?.textContent === "Resume");
  await page.keyboard.press("Space");
  await page.getByRole("button", { name: "Pause" }).waitFor();
  log("walked to a stack and paused its log from the keyboard");
  await page.getByRole("link", { name: "Stacks" }).first().click();
  await page.locator('tr[data-stack="web-e2e"]').getByText("deployed").waitFor();

  // Edit the deployed stack. A plain edit saves without a run; one that another save beat
  // answers 412 and the form reloads, naming what changed.
  const runs = async () => (await apiAs(MEMBER, "GET", `/v1/stacks/${stackId}/runs?limit=100`)).items.length;
  const runsBefore = await runs();
  await page.getByRole("link", { name: "web-e2e" }).click();
  await page.getByRole("link", { name: "Edit", exact: true }).click();
  await page.getByRole("heading", { name: "Edit web-e2e" }).waitFor();
  await page.getByText("No machine is touched").waitFor();
  check(await page.getByRole("button", { name: "No changes to save" }).isDisabled(), "nothing to save before a change");
  check(await page.getByLabel("Environment *").isDisabled(), "the environment is read-only once deployed");
  const cur = await fetch(`${API}/v1/stacks/${stackId}`, { headers: { Authorization: `Bearer ${MEMBER}` } });
  const botEdit = await fetch(`${API}/v1/stacks/${stackId}`, {
    method: "PATCH",
    headers: { Authorization: `Bearer ${MEMBER}`, "Content-Type": "application/json", "If-Match": cur.headers.get("ETag") },
    body: JSON.stringify({ description: "described by a bot" }),
  });
  await cur.text();
  check(botEdit.ok, `the bot's edit: ${botEdit.status} ${await botEdit.text()}`);
  await page.getByLabel("Labels").fill("e2e, web, edited");
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByText("This stack was changed meanwhile").waitFor();
  check(
    (await page.getByRole("status").filter({ hasText: "meanwhile" }).textContent()).includes("description"),
    "the stale save names what changed",
  );
  check((await page.getByLabel("Description").inputValue()) === "described by a bot", "the form shows the stack as it is now");
  await page.getByLabel("Labels").fill("e2e, web, edited");
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByText("Saved; nothing had to run.").waitFor();
  check((await apiAs(MEMBER, "GET", `/v1/stacks/${stackId}`)).labels.includes("edited"), "the labels were saved");
  check((await runs()) === runsBefore, "a plain edit starts no run");
  log("plain edit saved without a run, after a 412 that named the change");

  // Raise app #1's memory: the plan re-applies that machine alone and says why.
  await app
    .locator(".exec")
    .nth(1)
    .getByLabel(/^memory_mb/)
    .selectOption("1024");
  const planned = page.locator('[data-plan-entry="app #1"]');
  await planned.getByText("memory_mb: 512 → 1024").waitFor();
  check((await planned.getAttribute("data-action")) === "reapply", "app #1 is re-applied");
  check((await page.locator("[data-plan-entry]").count()) === 1, "nothing else is touched");
  check((await page.locator('[data-count="reapply"]').textContent()) === "1 to re-apply", "counted");
  await screen(page, "edit-plan");
  // Save and re-apply while the app's script hangs: the run is in progress, editing waits.
  writeFileSync(HANG, "hang");
  await page.getByRole("button", { name: "Save and re-apply" }).click();
  await page.waitForURL(new RegExp(`#/stacks/${stackId}$`));
  await page.getByText("waiting for the license server").first().waitFor({ timeout: 60_000 });
  check(await page.getByRole("button", { name: "Edit", exact: true }).isDisabled(), "Edit is disabled while the run is in progress");
  await page.goto(`${CONSOLE}/#/stacks/${stackId}/edit`);
  await page.getByText(/run is (queued|running): editing is possible again when it ends/).waitFor();
  check(await page.getByLabel("Labels").isDisabled(), "the form is disabled while a run is in progress");
  await screen(page, "edit-busy");
  rmSync(HANG);
  // The run ends: the form comes back, enabled, with the new memory.
  await page.waitForFunction(() => !document.querySelector("#f-labels")?.disabled, null, { timeout: 90_000 });
  await page.getByText("No machine is touched").waitFor();
  check(
    (await app
      .locator(".exec")
      .nth(1)
      .getByLabel(/^memory_mb/)
      .inputValue()) === "1024",
    "the edit is kept",
  );
  await page.getByRole("link", { name: "Back to the stack" }).click();
  await page
    .locator("h2", { has: page.locator('[data-run-kind="reapply"]') })
    .locator(".state-succeeded")
    .waitFor({ timeout: 30_000 });
  const reapplied = await page
    .locator(".card")
    .evaluateAll((cs) => cs.map((c) => `${c.getAttribute("data-card")}=${c.getAttribute("data-state")}`).sort());
  check(reapplied.join(",") === "app #0=skipped,app #1=succeeded,db #0=skipped", `only app #1 ran: ${reapplied}`);
  log("save and re-apply ran app #1 only:", reapplied.join(","));
  // The re-apply's columns are numbered as the template's phases (#29), not by the run's slots.
  const columns = async () =>
    page
      .getByRole("list", { name: "Pipeline" })
      .getByRole("listitem")
      .evaluateAll((cs) => cs.map((c) => c.getAttribute("aria-label")));
  check((await columns()).join(" | ") === "Phase 1: database | Phase 2: application", `phases 1 and 2 of the template: ${await columns()}`);

  // Replace app #0 by adding first: the plan says so, the old one's cleanup runs before it is
  // destroyed (in the log), and the name is typed because a machine goes.
  await page.getByRole("link", { name: "Edit", exact: true }).click();
  await page.getByText("No machine is touched").waitFor();
  await app.getByRole("button", { name: "Remove app #0" }).click();
  await app.getByRole("button", { name: "Add machine to app" }).click();
  // A machine keeps its number (#29): the survivor is still app #1, the new one is app #2,
  // the number the API gives it.
  const heads = await app.locator(".exec h4").allTextContents();
  check(heads.join(",") === "app #1,app #2", `the form keeps the survivor's number: ${heads}`);
  const added = app.locator(".exec").nth(1);
  const free = await added.getByLabel("Address *").locator("option", { hasText: "vm-15" }).getAttribute("value");
  await added.getByLabel("Address *").selectOption(free);
  await added.getByLabel("Node *").selectOption("pve1");
  const addedPool = added.getByLabel(/^Resource pool/);
  if (await addedPool.count()) await addedPool.selectOption("dev");
  await page.getByText("app: replaced by adding the new machine first, then removing the old one.").waitFor();
  await page.locator('[data-plan-entry="app #0"][data-action="destroy"]').getByText("First runs its cleanup: deregister").waitFor();
  check((await page.locator('[data-action="create"]').count()) === 1, "one machine is added");
  const replace = page.getByRole("button", { name: "Save and re-apply" });
  check(await replace.isDisabled(), "a save that destroys a machine waits for the name");
  await page.getByLabel(/Type the stack's name/).fill("web-e2e");
  await screen(page, "edit-replace");
  await replace.click();
  await page.waitForURL(new RegExp(`#/stacks/${stackId}$`));
  // This run's pipeline has a card for the new machine; wait for it, and for the run to end.
  await page.locator('.card[data-card="app #2"]').waitFor({ timeout: 30_000 });
  await page
    .locator("h2", { has: page.locator('[data-run-kind="reapply"]') })
    .locator(".state-succeeded")
    .waitFor({ timeout: 90_000 });
  const replaced = await page
    .locator(".card")
    .evaluateAll((cs) => cs.map((c) => `${c.getAttribute("data-card")}=${c.getAttribute("data-state")}`).sort());
  check(
    replaced.join(",") === "app #0=succeeded,app #1=skipped,app #2=succeeded,db #0=skipped",
    `the new app #2 was built and app #0 destroyed, nothing else: ${replaced}`,
  );
  await page.getByRole("toolbar", { name: "Log" }).getByLabel("Search").fill("deregistering");
  await page.getByText(/^\d+ found/).waitFor();
  log("replaced app #0 by adding first; its cleanup ran:", replaced.join(","));
  check(
    (await columns()).join(" | ") === "Phase 1: database | Phase 2: application | Phase 2: application (remove after replacing)",
    `replacing stays in phase 2: ${await columns()}`,
  );

  // Actions (#17): terraform instances made and undone, a script on a chosen machine.
  await actionsJourney({ browser, page, stackId, CONSOLE, VIEWER, MEMBER, apiAs, screen, check, log });

  // Duplicate: a new draft in the create form, with what could be copied.
  await page.getByRole("button", { name: "Duplicate" }).click();
  await page.waitForURL(/#\/stacks\/[0-9a-f-]+\/edit$/);
  check(!page.url().includes(stackId), "the duplicate is another stack");
  const dupId = /stacks\/([0-9a-f-]+)\/edit/.exec(page.url())[1];
  await page.getByRole("heading", { name: /^Draft / }).waitFor();
  await db.waitFor();
  check(
    (await db.getByLabel("memory_mb").inputValue()) !== "" && (await db.getByLabel("Address *").inputValue()) === "",
    "answers copied, addresses left empty",
  );
  // The draft opens with a notice of what the copy left out (the duplicate's not_copied).
  await page
    .getByTestId("duplicate-notice")
    .getByText(/^db #0 · address: /)
    .waitFor();
  await screen(page, "duplicate-draft");
  await page.goto(`${CONSOLE}/#/stacks/${stackId}`);
  await page.locator(".card").first().waitFor();
  log("duplicated into a draft");

  // Startup: the stack's three machines, with their host and the state Proxmox reports.
  await page.getByRole("link", { name: "Startup" }).click();
  await page.locator('tr[data-machine="web-e2e app #1"]').waitFor();
  const machines = await page
    .locator('tr[data-machine^="web-e2e "]')
    .evaluateAll((rs) => rs.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent)));
  check(
    machines.length === 3 && machines.every((m) => /^pve\d$/.test(m[4]) && /^\d+$/.test(m[5]) && m[6] !== ""),
    `three machines with host, VM and state: ${JSON.stringify(machines)}`,
  );
  await screen(page, "startup");
  // The network's addresses say which stack holds them.
  await page.getByRole("link", { name: "Catalogue" }).click();
  await page.getByRole("link", { name: "Networks" }).click();
  await page.locator("tr[data-network] a").first().click();
  const held = page.locator("tr[data-address]", { has: page.getByRole("link", { name: "web-e2e" }) });
  await held.first().waitFor();
  check((await held.count()) === 3, `three addresses held by web-e2e (saw ${await held.count()})`);
  await screen(page, "catalogue-addresses");
  await page.getByRole("link", { name: "web-e2e" }).first().click();
  await page.locator(".card").first().waitFor();

  // Templates: a member reads them and is offered no write; an admin adds a version, after
  // a definition the API refuses with its problems named.
  await page.getByRole("link", { name: "Templates" }).click();
  await page.getByRole("link", { name: "sandbox-vm" }).click();
  await page.getByText("The first version.").waitFor();
  await page.locator('.preview fieldset[data-job="app"]').waitFor();
  check(
    (await page.getByRole("button", { name: /^(New version|New template|Deactivate.*)$/ }).count()) === 0,
    "a member is offered no template write",
  );
  const a2 = await (await browser.newContext({ viewport: { width: 1360, height: 900 } })).newPage();
  a2.setDefaultTimeout(20_000);
  a2.on("request", (r) => hosts.add(new URL(r.url()).origin));
  await a2.goto(await signInLink(CONSOLE, API, ADMIN, "#/templates"));
  await a2.getByRole("link", { name: "sandbox-vm" }).click();
  await a2.getByText("Nothing changed: the branches still point to the commits it pinned.").waitFor();
  await screen(a2, "template");
  await a2.getByRole("button", { name: "New version" }).click();
  // From git: a file the branch lacks is refused on the path's field.
  check((await a2.getByLabel("Repository *").inputValue()) !== "", "the repository is prefilled");
  await a2.getByLabel("Path", { exact: true }).fill("nope.yaml");
  await a2.getByRole("button", { name: "Create version" }).click();
  await a2
    .locator(".field.has-error")
    .getByText(/is not a file of main/)
    .waitFor({ timeout: 60_000 });
  await screen(a2, "template-version-from-git-refused");
  await a2.getByLabel("pasted here").check();
  const defText = await a2.getByLabel("Definition (YAML or JSON) *").inputValue();
  check(defText.includes('"name": "sandbox-vm"'), "the new version starts from the current definition");
  await a2.getByLabel("Definition (YAML or JSON) *").fill('{"name": "sandbox-vm", "phases": []}');
  await a2.getByRole("button", { name: "Create version" }).click();
  await a2.getByText(/The definition has \d+ problem/).waitFor({ timeout: 60_000 });
  await screen(a2, "template-version-invalid");
  // Version 2 drops the app job (and the action that runs on it).
  const v2 = JSON.parse(defText);
  v2.phases = v2.phases.filter((p) => !p.jobs.some((j) => j.name === "app"));
  delete v2.actions;
  await a2.getByLabel("Definition (YAML or JSON) *").fill(JSON.stringify(v2, null, 2));
  await a2.getByRole("button", { name: "Create version" }).click();
  await a2.waitForURL(/v=2$/, { timeout: 60_000 });
  await a2.locator('[data-change="job app"]').getByText("removed").waitFor();
  await screen(a2, "template-version-changes");
  log("an admin added version 2 of the template without app; the change from v1 is listed");

  // Upgrade the stack to it: the plan destroys both apps (their cleanup first), so the name is
  // typed; the upgrade run destroys them and leaves the db.
  await a2.goto(`${CONSOLE}/#/stacks/${stackId}/edit`);
  await a2.getByLabel("Version *").selectOption("2");
  await a2.getByRole("region", { name: "Template changes" }).locator('[data-change="job app"]').waitFor();
  await a2.locator('[data-plan-entry="app #1"][data-action="destroy"]').getByText("First runs its cleanup: deregister").waitFor();
  check((await a2.locator('[data-action="destroy"]').count()) === 2, "both apps are destroyed");
  const upgrade = a2.getByRole("button", { name: "Upgrade to v2" });
  check(await upgrade.isDisabled(), "the upgrade waits for the name");
  await a2.getByLabel(/Type the stack's name/).fill("web-e2e");
  await screen(a2, "upgrade-plan");
  await upgrade.click();
  await a2.waitForURL(new RegExp(`#/stacks/${stackId}$`));
  await a2
    .locator("h2", { has: a2.locator('[data-run-kind="upgrade"]') })
    .locator(".state-succeeded")
    .waitFor({ timeout: 90_000 });
  const upgraded = await apiAs(ADMIN, "GET", `/v1/stacks/${stackId}`);
  check(
    upgraded.template_version === 2 &&
      (upgraded.jobs.app === undefined || upgraded.jobs.app.executions.every((e) => e.state === "removed")),
    `upgraded to v2 without apps: ${JSON.stringify(upgraded.jobs).slice(0, 300)}`,
  );
  log("upgraded the stack to v2: the apps were destroyed");

  // Remove: what happens, in order, and the name typed to confirm.
  await page.goto(`${CONSOLE}/#/stacks/${stackId}`);
  await page.getByRole("button", { name: "Remove" }).click();
  const rm = page.getByRole("alertdialog");
  // The dialog draws its steps once the stack's jobs are loaded.
  await rm.locator("li").nth(2).waitFor();
  check((await rm.locator("li").count()) === 3, `the removal's steps are listed: ${await rm.locator("li").allTextContents()}`);
  check(
    (await rm.locator("li").first().textContent()).includes("Its 1 execution is destroyed"),
    `what is destroyed first: ${await rm.locator("li").first().textContent()}`,
  );
  check(await rm.getByRole("button", { name: "Yes, remove" }).isDisabled(), "remove waits for the name");
  await rm.getByLabel(/Type the stack's name/).fill("web-e2");
  check(await rm.getByRole("button", { name: "Yes, remove" }).isDisabled(), "a wrong name does not confirm");
  await rm.getByLabel(/Type the stack's name/).fill("web-e2e");
  await screen(page, "detail-remove-confirm");
  await rm.getByRole("button", { name: "Yes, remove" }).click();
  await page.locator(".page-head .state-removed").waitFor({ timeout: 120_000 });
  log("removed after typing its name");

  // Force-remove for real: the duplicate is deployed, its app hangs and the run is canceled;
  // the failed stack is force-removed by an admin, and the manifest downloaded.
  writeFileSync(HANG, "hang");
  await page.goto(`${CONSOLE}/#/stacks/${dupId}/edit`);
  await app.getByRole("button", { name: "Add machine to app" }).waitFor();
  // Two apps are wanted below. The duplicate was seen with one app, and with none, in loaded
  // runs (an open question, reported): this part tests force-remove, so it adds the machines.
  for (let n = await app.locator(".exec").count(); n < 2; n++) {
    log(`the duplicate came with ${await app.locator(".exec").count()} app executions; adding one`);
    await app.getByRole("button", { name: "Add machine to app" }).click();
  }
  await app.locator(".exec").nth(1).waitFor();
  const dupName = await page.getByLabel("Name *").inputValue();
  // Addresses by name: the free list moved while the first stack was removed.
  const place = async (scope, addr, node) => {
    await scope.getByLabel("Address *").selectOption(
      await scope
        .getByLabel("Address *")
        .locator("option", { hasText: `${addr} (` })
        .getAttribute("value"),
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
  await page.getByText("waiting for the license server").first().waitFor({ timeout: 90_000 });
  await page.getByRole("button", { name: "Cancel run" }).click();
  await page.getByRole("button", { name: "Yes, cancel the run" }).click();
  await page.locator(".page-head .state-failed").waitFor({ timeout: 60_000 });
  rmSync(HANG);
  await a2.goto(`${CONSOLE}/#/stacks/${dupId}`);
  await a2.getByRole("button", { name: "Force-remove" }).click();
  const fr = a2.getByRole("alertdialog");
  await fr.locator("tr[data-vm]").first().waitFor();
  const leftVMs = await fr.locator("tr[data-vm]").count();
  await fr.getByLabel(/Type the stack's name/).fill(dupName);
  const [fdl] = await Promise.all([a2.waitForEvent("download"), fr.getByRole("button", { name: "Yes, force-remove" }).click()]);
  const abandoned = JSON.parse(readFileSync(await fdl.path(), "utf8"));
  check(
    abandoned.stack_id === dupId && abandoned.vms.length === leftVMs && leftVMs >= 1,
    `the manifest lists the ${leftVMs} VMs shown: ${JSON.stringify(abandoned).slice(0, 300)}`,
  );
  await a2.locator(".page-head .state-removed").waitFor();
  await a2.getByText(/It was force-removed/).waitFor();
  await screen(a2, "detail-force-removed");
  log(`force-removed the failed duplicate: ${leftVMs} VM(s) left behind, manifest downloaded`);

  // Catalogue: the sandbox's inventory, refreshed; a registration with a wrong token shows
  // the cluster's refusal on the token's field, then the right token registers it.
  const sandbox = (await apiAs(ADMIN, "GET", "/v1/proxmox-servers")).items[0];
  await a2.getByRole("link", { name: "Catalogue" }).click();
  await a2.getByRole("link", { name: sandbox.name, exact: true }).click();
  await a2.locator('tr[data-node="pve1"]').waitFor();
  await a2.getByRole("button", { name: "Refresh inventory" }).click();
  await a2.getByRole("button", { name: "Refresh inventory" }).waitFor();
  await screen(a2, "catalogue-server");
  await a2.getByRole("link", { name: "Proxmox servers" }).click();
  await a2.getByRole("button", { name: "Register a Proxmox server" }).click();
  const reg = a2.locator("form.resource-form");
  await reg.getByLabel("Name *").fill("second");
  await reg.getByLabel("API URL *").fill(sandbox.api_url);
  await reg.getByLabel("API token id *").fill(sandbox.token_id);
  await reg.getByLabel("API token secret *").fill("not-the-secret");
  await reg.getByLabel("TLS fingerprint (SHA-256)").fill(sandbox.tls_fingerprint);
  await reg.getByLabel("SSH private key *").fill(readFileSync(env("NODE_KEY_FILE"), "utf8"));
  await reg.getByLabel("Nodes' SSH").fill(sandbox.nodes.map((n) => `${n.name} ${n.ssh_address} ${n.ssh_host_key_fingerprint}`).join("\n"));
  await reg.getByRole("button", { name: "Check and register" }).click();
  await reg
    .locator(".field.has-error")
    .getByText(/refused the API token/)
    .waitFor({ timeout: 30_000 });
  check((await reg.getByLabel("API token secret *").getAttribute("aria-invalid")) === "true", "the refusal is on the secret's field");
  await screen(a2, "catalogue-register-refused");
  await reg.getByLabel("API token secret *").fill(env("PVE_TOKEN_SECRET"));
  await reg.getByRole("button", { name: "Check and register" }).click();
  await a2.locator('tr[data-server="second"]').waitFor({ timeout: 30_000 });
  log("registered a Proxmox server after a refused token");

  // A network's addresses: a wrong IP is refused on its field; free and attached are told.
  await a2.getByRole("link", { name: "Networks" }).click();
  await a2.locator("tr[data-network] a").first().click();
  await a2.getByRole("button", { name: "Add an address" }).click();
  const addr = a2.locator("form.resource-form");
  await addr.getByLabel("Name *").fill("spare");
  await addr.getByLabel("IP address *").fill("10.255.255.300");
  await addr.getByRole("button", { name: "Save" }).click();
  await addr.locator(".field.has-error").first().waitFor();
  check((await addr.getByLabel("IP address *").getAttribute("aria-invalid")) === "true", "the wrong IP is refused on its field");
  await screen(a2, "catalogue-address-refused");
  await addr.getByRole("button", { name: "Cancel" }).click();
  // A range at once: five named addresses, free.
  const lab = (await apiAs(ADMIN, "GET", "/v1/networks")).items.find((n) => n.name === "loop");
  const prefix = lab.cidr.replace(/\.0\/24$/, "");
  await a2.getByRole("button", { name: "Add a range of addresses" }).click();
  const rng = a2.locator("form.resource-form");
  await rng.getByLabel("Name prefix *").fill("spare-");
  await rng.getByLabel("First IP *").fill(`${prefix}.100`);
  await rng.getByLabel("Last IP *").fill(`${prefix}.104`);
  await rng.getByRole("button", { name: "Add the range" }).click();
  await a2.locator('tr[data-address="spare-104"]').waitFor();
  check((await a2.locator('tr[data-address^="spare-"]').count()) === 5, "five addresses added at once");
  check((await a2.locator('tr[data-address="spare-100"] td').nth(2).textContent()) === "free", "free");
  await screen(a2, "catalogue-address-range");
  log("added a range of five addresses");
  await a2.getByRole("link", { name: "SSH keys" }).click();
  await a2.getByRole("link", { name: "Environments" }).click();
  await a2.locator('tr[data-environment="lab"]').waitFor();
  await screen(a2, "catalogue-environments");
  // People (admin): a user with a wrong e-mail is refused on its field, then added to a team.
  await a2.getByRole("link", { name: "People" }).click();
  await a2.getByRole("button", { name: "Add a user" }).click();
  const uf = a2.locator("form.resource-form");
  await uf.getByLabel("Name *").fill("Nora Ops");
  await uf.getByLabel("E-mail *").fill("not-an-email");
  await uf.getByLabel("ops", { exact: true }).check();
  await uf.getByRole("button", { name: "Save" }).click();
  await uf.locator(".field.has-error").first().waitFor();
  check((await uf.getByLabel("E-mail *").getAttribute("aria-invalid")) === "true", "the wrong e-mail is refused on its field");
  await screen(a2, "people-user-refused");
  await uf.getByLabel("E-mail *").fill("nora@example.org");
  await uf.getByRole("button", { name: "Save" }).click();
  await a2.locator('tr[data-user="nora@example.org"]').getByText("ops", { exact: true }).waitFor();
  await a2.getByRole("link", { name: "Teams" }).click();
  await a2
    .locator('tr[data-team="ops"]')
    .getByText(/Nora Ops \(member\)/)
    .waitFor();
  log("an admin added a user to a team after a refused e-mail");
  await a2.context().close();
  // A member reads the catalogue and is offered no write but its own SSH keys.
  await page.getByRole("link", { name: "Catalogue" }).click();
  await page.locator(`tr[data-server="${sandbox.name}"]`).waitFor();
  check(
    (await page.getByRole("button", { name: /^(Register a Proxmox server|Refresh inventory)$/ }).count()) === 0,
    "a member registers no server",
  );
  await page.getByRole("link", { name: "Environments" }).click();
  await page.locator('tr[data-environment="lab"]').waitFor();
  check((await page.getByRole("button", { name: /^(Add an environment|Edit .*)$/ }).count()) === 0, "a member edits no environment");
  await page.getByRole("link", { name: "SSH keys" }).click();
  await page
    .locator('tr[data-key="laptop"]')
    .getByText(/^SHA256:/)
    .waitFor();
  await screen(page, "catalogue-ssh-keys");
  log("the catalogue: admins write, members read (and keep their own keys)");

  // People: a minted token is shown once, copied, and works; revoked, it no longer does.
  await page.getByRole("link", { name: "People" }).click();
  await page.locator("tr[data-user]").first().waitFor();
  check((await page.getByRole("button", { name: /^(Add a user|Change .*)$/ }).count()) === 0, "a member changes no user");
  await page.getByRole("link", { name: "API tokens" }).click();
  await page.getByRole("button", { name: "Mint a token" }).click();
  await page.locator("form.resource-form").getByLabel("Name *").fill("ci-pipeline");
  await page.getByRole("button", { name: "Mint", exact: true }).click();
  const minted = await page.locator('[data-token="minted"]').textContent();
  check(/^hzn_/.test(minted), "the token is shown");
  await page.getByRole("button", { name: "Copy", exact: true }).click();
  check((await page.evaluate(() => navigator.clipboard.readText())) === minted, "and copied");
  const meWith = async (t) => (await fetch(`${API}/v1/me`, { headers: { Authorization: `Bearer ${t}` } })).status;
  check((await meWith(minted)) === 200, "the minted token works");
  await screen(page, "people-token-minted");
  await page.getByRole("button", { name: "Done, hide it" }).click();
  check(!(await page.content()).includes(minted), "the token is never shown again");
  await page.getByRole("button", { name: "Revoke ci-pipeline" }).click();
  await page.getByRole("button", { name: "Yes, revoke ci-pipeline" }).click();
  await page
    .locator('tr[data-token-name="ci-pipeline"]')
    .getByText(/^revoked/)
    .waitFor();
  check((await meWith(minted)) === 401, "the revoked token is refused");
  await screen(page, "people-tokens");
  log("minted a token, copied it once, revoked it");
  await notificationsJourney({ browser, page, CONSOLE, API, MEMBER, VIEWER, RECEIVER, apiAs, screen, check, log });

  // ISOs: an admin builds an installer image (served from here) from the build form and
  // watches its stages turn green, its log and summary, then finds it built in the list.
  const image = Buffer.from("an installer for the console's journey");
  const imageServer = createServer((_, res) => res.end(image));
  await new Promise((r) => imageServer.listen(0, "127.0.0.1", r));
  await apiAs(ADMIN, "POST", "/v1/iso-templates", {
    name: "installer-e2e",
    kind: "iso",
    spec: {
      source: {
        url: `http://127.0.0.1:${imageServer.address().port}/installer-e2e.iso`,
        checksum: createHash("sha256").update(image).digest("hex"),
      },
      storage: "local",
    },
  });
  const ai = await (await browser.newContext({ viewport: { width: 1360, height: 900 } })).newPage();
  ai.setDefaultTimeout(20_000);
  ai.on("request", (r) => hosts.add(new URL(r.url()).origin));
  await ai.goto(await signInLink(CONSOLE, API, ADMIN, "#/isos"));
  await ai.getByRole("heading", { name: "ISOs" }).waitFor();
  await ai.getByRole("link", { name: "Build an ISO" }).click();
  await ai.getByLabel("ISO template *").selectOption({ label: "installer-e2e (iso, latest v1)" });
  await ai.getByLabel("Proxmox server *").selectOption({ index: 1 });
  await ai.getByLabel("Node *").selectOption("pve1");
  await ai.getByLabel("Name", { exact: true }).fill("installer-e2e on pve1");
  await screen(ai, "iso-build-form");
  await ai.getByRole("button", { name: "Build", exact: true }).click();
  await ai.getByRole("heading", { name: /installer-e2e on pve1/ }).waitFor();
  for (const stage of ["preflight", "image"])
    await ai.locator(`.card[data-card="${stage}"][data-state="succeeded"]`).waitFor({ timeout: 30_000 });
  await ai
    .getByTestId("iso-summary")
    .getByText(/done: preflight: every check passed, image: downloaded/)
    .waitFor();
  await ai.locator('[data-testid="log-lines"] .line').first().waitFor();
  await ai.getByRole("heading", { name: /installer-e2e on pve1 built/ }).waitFor();
  await screen(ai, "iso-detail");
  await ai.getByRole("link", { name: "ISOs" }).click();
  await ai.locator('tr[data-iso="installer-e2e on pve1"]').getByText("built", { exact: true }).waitFor();
  await screen(ai, "isos-list");
  imageServer.close();
  log("built an ISO from the form; its stages went green");
  await isoDay2({ ai, apiAs, screen, check, log, ADMIN, MEMBER, isoName: "installer-e2e on pve1" });
  await quotaJourney({ ai, page, apiAs, screen, check, log, ADMIN, MEMBER });

  const foreign = [...hosts].filter((h) => h !== CONSOLE && h !== API && !h.startsWith("data:") && h !== "null");
  check(foreign.length === 0, `no request to any host but the console and the API (saw ${foreign})`);
  log(`done: ${shots} screens`);
} catch (e) {
  // What each page showed when it failed, for the one reading the test's output.
  for (const c of browser.contexts())
    for (const [i, p] of c.pages().entries())
      await p.screenshot({ path: join(OUT, `failed-${browser.contexts().indexOf(c)}-${i}.png`), fullPage: true }).catch(() => {});
  throw e;
} finally {
  await browser.close();
}

/** sshPublicKey is a new ed25519 key's authorized_keys line (its private half is thrown away). */
function sshPublicKey(comment) {
  const { publicKey } = generateKeyPairSync("ed25519");
  const raw = Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url");
  const field = (b) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  return `ssh-ed25519 ${Buffer.concat([field(Buffer.from("ssh-ed25519")), field(raw)]).toString("base64")} ${comment}`;
}
