// Runs on the deployed web-e2e: a viewer signs in by a link (spent and old links refused) and
// sees no write button, then watches the list follow the member's runs live; the member runs
// one card again, cancels a hung run; an admin previews a force-remove (the member is offered
// none); the member retries the failed jobs from the Retry menu.
import { readFileSync } from "node:fs";
import { expect, hang, signInLink, stackNamed, test, unhang } from "./fixtures";

test("run again, cancel, retry", async ({ page, lab, api, axe, fresh, signIn }) => {
  const stackId = await stackNamed(api, lab.member, "web-e2e");
  await page.goto(await signInLink(lab, lab.member, `#/stacks/${stackId}`));
  await expect(page.locator(".page-head .state-deployed")).toBeVisible();

  // A viewer sees no write button. The viewer signs in by a link, as `go tool task up`
  // prints one: it carries a one-time code, never the token, wiped from the address bar; the
  // same link a second time signs nobody in, and an old #token= link is refused.
  const vpage = await fresh();
  const viewerLink = await signInLink(lab, lab.viewer);
  await vpage.goto(viewerLink);
  await expect(vpage.getByRole("heading", { name: "Stacks" })).toBeVisible();
  expect(vpage.url(), "the code is wiped from the address bar").not.toContain("code=");
  const again = await fresh();
  await again.goto(viewerLink);
  await expect(again.getByText("This sign-in code is unknown, used or expired")).toBeVisible();
  expect(again.url(), "a spent code is wiped too").not.toContain("code=");
  const old = await fresh();
  await old.goto(`${lab.console}/#token=${lab.viewer}`);
  await expect(old.getByText("This sign-in link is no longer accepted")).toBeVisible();
  expect(old.url(), "an old token link is wiped and not honoured").not.toContain(lab.viewer);
  await vpage.getByRole("link", { name: "web-e2e" }).click();
  await expect(vpage.locator(".card")).toHaveCount(3);
  await expect(
    vpage.getByRole("button", { name: /^(Deploy|Cancel run|Remove|Duplicate|Run again: .*|Edit draft)$/ }),
    "a viewer sees no write button",
  ).toHaveCount(0);
  await expect(vpage.locator("summary", { hasText: "Retry" }), "a viewer sees no retry menu").toHaveCount(0);
  await expect(vpage.getByRole("link", { name: "New stack" }), "a viewer is not offered New stack").toHaveCount(0);
  await axe(vpage, "viewer-detail");
  // The viewer now watches the list: it must follow the member's runs live.
  await vpage.getByRole("link", { name: "Stacks" }).first().click();
  await expect(vpage.locator('tr[data-stack="web-e2e"]').getByText("deployed")).toBeVisible();
  let viewerNavs = 0;
  vpage.on("framenavigated", (f) => {
    if (f === vpage.mainFrame()) viewerNavs++;
  });

  // Run one card again: a run of that execution only.
  await page.getByRole("button", { name: "Run again: app #1" }).click();
  await expect(page.locator('h2 [data-run-kind="run_again"]')).toBeVisible({ timeout: 30_000 });
  await expect(page.locator("h2", { hasText: "Pipeline" }), "the run's kind is said in words").not.toContainText("run_again");
  await expect(page.locator(".page-head .state-deployed")).toBeVisible({ timeout: 90_000 });
  await expect(page.locator('.card[data-card="app #1"]')).toHaveAttribute("data-state", "succeeded");

  // Cancel a hung run, then retry the failed jobs.
  hang();
  await page.getByRole("button", { name: "Run again: app #1" }).click();
  await expect(page.getByText("waiting for the license server").first()).toBeVisible({ timeout: 60_000 });
  await page.getByRole("button", { name: "Cancel run" }).click();
  await axe(page, "detail-cancel-confirm");
  await page.getByRole("button", { name: "Yes, cancel the run" }).click();
  await expect(page.locator(".page-head .state-failed")).toBeVisible({ timeout: 60_000 });
  unhang();
  // A member is offered no force-remove; an admin is, with what would be left behind.
  await expect(page.getByRole("button", { name: "Force-remove" }), "a member is not offered Force-remove").toHaveCount(0);
  const apage = await signIn(lab.admin, `#/stacks/${stackId}`);
  await apage.getByRole("button", { name: "Force-remove" }).click();
  const force = apage.getByRole("alertdialog");
  await expect(force.locator("tr[data-vm]"), "the three VMs that would be left behind are listed").toHaveCount(3);
  await expect(force.getByRole("button", { name: "Yes, force-remove" }), "force-remove waits for the name").toBeDisabled();
  await axe(apage, "detail-force-remove-confirm");
  const [mdl] = await Promise.all([
    apage.waitForEvent("download"),
    force.getByRole("button", { name: "Download the abandon manifest" }).click(),
  ]);
  const manifest = JSON.parse(readFileSync((await mdl.path())!, "utf8"));
  expect(
    [manifest.stack_id, manifest.vms.length, manifest.addresses.length],
    `the manifest lists the VMs and addresses: ${JSON.stringify(manifest).slice(0, 300)}`,
  ).toEqual([stackId, 3, 3]);
  await force.getByRole("button", { name: "No" }).click();
  await apage.context().close();
  await expect(vpage.locator('tr[data-stack="web-e2e"]').getByText("failed")).toBeVisible();
  expect(viewerNavs, "the list turned failed without a reload").toBe(0);
  await page.locator("summary", { hasText: "Retry" }).click();
  await axe(page, "detail-retry-menu");
  // The menu closes on Escape and on a click outside it (#29).
  const menu = page.locator("details.menu");
  await page.keyboard.press("Escape");
  await expect(menu, "Escape closes the Retry menu").not.toHaveAttribute("open");
  await page.locator("summary", { hasText: "Retry" }).click();
  await expect(menu, "the Retry menu opens again").toHaveAttribute("open");
  await page.locator("h1").click();
  await expect(menu, "a click outside closes the Retry menu").not.toHaveAttribute("open");
  await page.locator("summary", { hasText: "Retry" }).click();
  await page.getByRole("menuitem", { name: "Retry failed jobs" }).click();
  await expect(page.locator('h2 [data-run-kind="retry"]')).toBeVisible({ timeout: 30_000 });
  await expect(page.locator(".page-head .state-deployed")).toBeVisible({ timeout: 90_000 });
});
