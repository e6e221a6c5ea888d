// web-e2e's history after 03-runs: who acted and when runs ended; an older run's log alone; a
// line's link, also loaded afresh; the offline banner; the list, live; and the way to a stack
// and its log's Pause from the keyboard alone.
import { expect, signInLink, stackNamed, test } from "./fixtures";

test("history, links and the keyboard", async ({ page, context, lab, api, axe }) => {
  const stackId = await stackNamed(api, lab.member, "web-e2e");
  await page.goto(await signInLink(lab, lab.member, `#/stacks/${stackId}`));
  await expect(page.locator(".page-head .state-deployed")).toBeVisible();

  // The history names who acted.
  const me = await api(lab.member, "GET", "/v1/me");
  await expect(page.getByRole("table", { name: "State changes" }).getByRole("cell", { name: me.name, exact: true }).first()).toBeVisible();
  // A run's end is Horizon's doing, not the member's (#29); the runs say who, when each ended
  // and how long it took.
  await expect(
    page.getByRole("table", { name: "State changes" }).getByRole("cell", { name: "Horizon", exact: true }).first(),
  ).toBeVisible();
  const firstRun = page.getByRole("table", { name: "Runs" }).locator("tbody tr").first();
  await expect(firstRun.locator("td").nth(4)).toHaveText(/\S/);
  const retryRow = await firstRun.locator("td").allTextContents();
  expect(retryRow.slice(0, 2), "the retry's row: its kind and who").toEqual(["retry", me.name]);
  expect(retryRow[4], "when it ended").not.toBe("");
  expect(retryRow[5], "how long it took").toMatch(/^\d+(s|m \d\ds)$/);
  // An older run's log is that run's alone, not followed into the later ones.
  const runList = (await api(lab.member, "GET", `/v1/stacks/${stackId}/runs?limit=20`)).items;
  const deployRun = runList.find((r: { kind: string }) => r.kind === "deploy");
  const deployLines = (
    await (
      await fetch(`${lab.api}/v1/stacks/${stackId}/logs?run=${deployRun.id}`, {
        headers: { Authorization: `Bearer ${lab.member}`, Accept: "application/x-ndjson" },
      })
    ).text()
  )
    .trim()
    .split("\n").length;
  await page.getByRole("table", { name: "Runs" }).getByRole("link", { name: "deploy", exact: true }).click();
  await expect(page.locator('h2 [data-run-kind="deploy"]')).toBeVisible();
  // The chosen run is shown where its pipeline starts (#29), not at the bottom of the page.
  await expect
    .poll(() =>
      page.evaluate(() => {
        const r = document.getElementById("pipeline")?.getBoundingClientRect();
        return !!r && r.top >= -1 && r.top < innerHeight / 2;
      }),
    )
    .toBe(true);
  await expect(page.locator(".log-tools [aria-live]"), "the deploy run's log alone").toHaveText(new RegExp(`^${deployLines} lines`));
  // A line's link opens its run's log scrolled to it, also when loaded afresh (the token is
  // kept per tab, so the same tab loads it). The run's log is complete (counted above) and the
  // view is paused, so no row moves between where the click aims and where it lands: one click.
  await page.getByRole("toolbar", { name: "Log" }).getByRole("button", { name: "Pause" }).click();
  await page.locator(".log-lines .line .ln").nth(3).click();
  await page.waitForURL(/line=/, { timeout: 5_000 });
  await expect(page.locator(".log-lines .line.linked")).toBeVisible();
  // Read after the click: the virtualised rows may have moved between a read and a click.
  const lineNo = (await page.locator(".log-lines .line.linked .ln").textContent()) ?? "";
  const linked = page.url();
  await page.goto(`${lab.console}/#/stacks`);
  await expect(page.getByRole("heading", { name: "Stacks" })).toBeVisible();
  await page.goto(linked);
  await expect(page.locator(".log-lines .line.linked .ln"), "the linked line is the one clicked").toHaveText(lineNo);
  await expect(page.locator(".log-lines .line.linked"), "and it is scrolled into view").toBeVisible();
  // Offline: a banner while the connection is lost, gone when it is back.
  await context.setOffline(true);
  await expect(page.getByText("Connection to Horizon lost")).toBeVisible({ timeout: 30_000 });
  await axe(page, "detail-offline");
  await context.setOffline(false);
  await expect(page.getByText("Connection to Horizon lost")).toHaveCount(0, { timeout: 30_000 });

  // The list shows it, live.
  await page.getByRole("link", { name: "Stacks" }).first().click();
  await expect(page.locator('tr[data-stack="web-e2e"]').getByText("deployed")).toBeVisible();
  await axe(page, "stacks-list");

  // From the keyboard alone: Tab to the stack, open it, Tab to the log's Pause, press it, then
  // Resume the same way.
  const tabTo = async (what: string) => {
    // The log's section headers are buttons too: up to ~40 of them are drawn.
    for (let i = 0; i < 200; i++) {
      await page.keyboard.press("Tab");
      if ((await page.evaluate(() => document.activeElement?.textContent)) === what) return;
    }
    throw new Error(`Tab never reached ${what}`);
  };
  await page.locator("body").focus();
  await tabTo("web-e2e");
  await page.keyboard.press("Enter");
  await expect(page.locator(".card").first()).toBeVisible();
  await tabTo("Pause");
  await page.keyboard.press("Enter");
  await expect(page.getByRole("button", { name: "Resume" })).toBeVisible();
  await tabTo("Resume");
  await page.keyboard.press("Space");
  await expect(page.getByRole("button", { name: "Pause" })).toBeVisible();
});
