// Deploy web-e2e (the draft 01-create made) and watch its cards turn green without a reload;
// its log paused, filtered by job and by machine, folded by step, searched and downloaded; a
// secret output copied without being shown, then revealed.
import { readFileSync } from "node:fs";
import { expect, signInLink, stackNamed, test } from "./fixtures";

test("deploy and watch the log", async ({ page, lab, api, axe }) => {
  const stackId = await stackNamed(api, lab.member, "web-e2e");
  // The draft is read last (#35): its form and the form's options have arrived first, and the
  // form still shows the draft's two apps, not a new stack's one (which Deploy would save).
  let release = () => {};
  const held = new Promise<void>((r) => {
    release = r;
  });
  await page.route(
    (u) => u.pathname === `/v1/stacks/${stackId}`,
    async (route) => {
      if (route.request().method() === "GET") await held;
      await route.continue();
    },
  );
  const arrived = (path: RegExp) => page.waitForResponse((r) => path.test(new URL(r.url()).pathname));
  const before = Promise.all(
    [/\/form$/, /\/addresses$/, /^\/v1\/ssh-keys$/, /^\/v1\/proxmox-servers\/[^/]+$/, /^\/v1\/isos$/].map(arrived),
  );
  await page.goto(await signInLink(lab, lab.member, `#/stacks/${stackId}/edit`));
  await before;
  // What the form does with them is done before the next frame.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r))));
  release();
  await expect(page.locator('fieldset[data-job="app"] .exec')).toHaveCount(2);
  let navigations = 0;
  page.on("framenavigated", (f) => {
    if (f === page.mainFrame()) navigations++;
  });

  // Deploy, then watch the cards turn green without reloading.
  await page.getByRole("button", { name: "Deploy" }).click();
  await page.waitForURL(new RegExp(`#/stacks/${stackId}$`));
  await expect(page.locator(".card").first()).toBeVisible();
  await expect(page.getByRole("listitem", { name: "Phase 2: application" })).toBeVisible();
  await expect(page.getByRole("listitem", { name: /^Phase \d/ }), "a column per phase").toHaveCount(2);
  // Pause while the deploy writes its log: new lines are counted, not shown.
  await expect(page.locator(".log-lines .line").first()).toBeVisible({ timeout: 60_000 });
  await page.getByRole("button", { name: "Pause" }).click();
  await expect(page.getByRole("button", { name: /^\d+ new lines$/ })).toBeVisible({ timeout: 60_000 });
  await axe(page, "detail-deploying");
  await page.getByRole("button", { name: /^\d+ new lines$/ }).focus();
  await page.keyboard.press("Enter"); // resumes, from the keyboard
  await expect(page.locator(".page-head .state-deployed")).toBeVisible({ timeout: 150_000 });
  const states = await page.locator(".card").evaluateAll((cs) => cs.map((c) => c.getAttribute("data-state")));
  expect(states, "three green cards").toEqual(["succeeded", "succeeded", "succeeded"]);
  expect(navigations, "no reload while deploying").toBeLessThanOrEqual(2);

  // Filter the log by job (on the server) and search in it.
  const lines = page.locator(".log-lines .line");
  const jobsShown = () => lines.evaluateAll((ls) => [...new Set(ls.map((l) => l.getAttribute("data-job")))]);
  await page.getByRole("toolbar", { name: "Log" }).getByLabel("Job").selectOption("app");
  await expect.poll(jobsShown, { message: "the app's lines alone" }).toEqual(["app"]);
  // Or by one machine (#29): its lines alone, each with its time.
  await page.getByRole("toolbar", { name: "Log" }).getByLabel("Job").selectOption("app/1");
  await expect
    .poll(async () => [...new Set(await page.locator(".log-lines .line .lj").allTextContents())], { message: "app #1's lines alone" })
    .toEqual(["app#1"]);
  await expect(page.locator(".log-lines .line .lts").first(), "a line says when it was written").toHaveText(/^\d\d:\d\d:\d\d$/);
  // Each step's lines are a section under a header whose button folds and unfolds them (#29):
  // folded, the next row under the header is the next section's header (or nothing).
  await page.locator(".log-lines").evaluate((el) => {
    el.scrollTop = 0;
  });
  await expect
    .poll(() =>
      page.evaluate(() =>
        [...document.querySelectorAll<HTMLElement>(".log-lines > div > *")].some((e) => e.style.transform === "translateY(0px)"),
      ),
    )
    .toBe(true);
  const stepHead = page.locator(".log-lines .log-step").first().getByRole("button");
  await expect(stepHead, "a step's section starts unfolded").toHaveAttribute("aria-expanded", "true");
  const rowUnder = () =>
    page.evaluate(() => {
      const r = [...document.querySelectorAll<HTMLElement>(".log-lines > div > *")].find((e) => e.style.transform === "translateY(18px)");
      return r ? r.className.split(" ")[0] : "";
    });
  expect(await rowUnder(), "an unfolded section's lines are under its header").toBe("line");
  await stepHead.click();
  await expect(stepHead).toHaveAttribute("aria-expanded", "false");
  await expect.poll(rowUnder, { message: "a folded section is its header alone" }).not.toBe("line");
  await stepHead.click();
  await expect(stepHead).toHaveAttribute("aria-expanded", "true");
  await expect.poll(rowUnder, { message: "and unfolds again" }).toBe("line");
  await page.getByRole("toolbar", { name: "Log" }).getByLabel("Job").selectOption("app");
  await expect(
    page
      .locator(".log-lines .line .lj")
      .filter({ hasText: /^app#0$/ })
      .first(),
  ).toBeAttached();
  await page.getByRole("toolbar", { name: "Log" }).getByLabel("Search").fill("warming up");
  await expect(page.getByText(/^\d+ found/)).toBeVisible();
  await axe(page, "detail-deployed");
  // Download the (filtered) log through a link: it lands on disk with the app's lines only.
  const [dl] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download" }).click()]);
  const text = readFileSync((await dl.path())!, "utf8");
  expect(text, "the download holds app's log").toContain("warming up the app: step 20 of 20");
  expect(text, "and app's only").not.toContain("apply of db");

  // Copy a secret: the clipboard holds it, the page never shows it.
  const row = page.locator('tr[data-output="app#0.api_key"]');
  await row.getByRole("button", { name: "Copy api_key" }).click();
  await expect(row.getByText("Copied")).toBeVisible();
  // "Copied" clears after a few seconds (#29).
  await expect(row.getByText("Copied")).toHaveCount(0, { timeout: 10_000 });
  const clip = await page.evaluate(() => navigator.clipboard.readText());
  const outputs = await api<{ value: string }>(lab.member, "POST", `/v1/stacks/${stackId}/outputs/app/0/api_key/reveal`);
  expect(clip, "the clipboard holds the secret").toBe(outputs.value);
  expect(clip.length, "a secret of some length").toBeGreaterThan(8);
  expect(await page.content(), "the page never showed the secret").not.toContain(clip);
  await row.getByRole("button", { name: "Reveal api_key" }).click();
  await expect(row.getByText(clip)).toBeVisible();
});
