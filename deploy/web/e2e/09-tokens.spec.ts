// People, as a member: no user to change; an API token minted is shown once, copied, and works;
// revoked, it no longer does.
import { expect, signInLink, test } from "./fixtures";

test("a token minted, copied once, revoked", async ({ page, lab, axe }) => {
  await page.goto(await signInLink(lab, lab.member, "#/stacks"));
  await page.getByRole("link", { name: "People" }).click();
  await expect(page.locator("tr[data-user]").first()).toBeVisible();
  await expect(page.getByRole("button", { name: /^(Add a user|Change .*)$/ }), "a member changes no user").toHaveCount(0);
  await page.getByRole("link", { name: "API tokens" }).click();
  await page.getByRole("button", { name: "Mint a token" }).click();
  await page.locator("form.resource-form").getByLabel("Name *").fill("ci-pipeline");
  await page.getByRole("button", { name: "Mint", exact: true }).click();
  await expect(page.locator('[data-token="minted"]'), "the token is shown").toHaveText(/^hzn_/);
  const minted = (await page.locator('[data-token="minted"]').textContent()) ?? "";
  await page.getByRole("button", { name: "Copy", exact: true }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText()), "and copied").toBe(minted);
  const meWith = async (t: string) => (await fetch(`${lab.api}/v1/me`, { headers: { Authorization: `Bearer ${t}` } })).status;
  expect(await meWith(minted), "the minted token works").toBe(200);
  await axe(page, "people-token-minted");
  await page.getByRole("button", { name: "Done, hide it" }).click();
  expect(await page.content(), "the token is never shown again").not.toContain(minted);
  await page.getByRole("button", { name: "Revoke ci-pipeline" }).click();
  await page.getByRole("button", { name: "Yes, revoke ci-pipeline" }).click();
  await expect(page.locator('tr[data-token-name="ci-pipeline"]').getByText(/^revoked/)).toBeVisible();
  expect(await meWith(minted), "the revoked token is refused").toBe(401);
  await axe(page, "people-tokens");
});
