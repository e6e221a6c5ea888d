// The first-admin path against an API with no admin yet (console_test.go starts it and runs
// this spec alone, as the first-admin project): the setup token the API logged, pasted on the
// sign-in screen, asks for a name and an email, makes the first admin, shows their API token
// once, and signs in with it.
import { env, expect, test } from "./fixtures";

test("the first admin", async ({ page, lab, axe }) => {
  const setup = env("SETUP_TOKEN");
  await page.goto(lab.console);
  await page.getByLabel("API token").fill(setup);
  await page.getByLabel("Your name").fill("Grace");
  await page.getByLabel("Your email").fill("grace@example.org");
  await axe(page, "first-admin");
  await page.getByRole("button", { name: "Create the first admin" }).click();
  await expect(page.getByRole("heading", { name: "You are Horizon's first admin" })).toBeVisible();
  const token = ((await page.locator("pre.token").textContent()) ?? "").trim();
  expect(token.slice(0, 4), "an API token is shown once").toBe("hzn_");
  expect(page.url(), "the token is never in the URL").not.toContain(token);
  await page.getByRole("button", { name: "Continue to the console" }).click();
  await expect(page.getByRole("heading", { name: "Stacks" })).toBeVisible();
  await expect(page.locator(".who", { hasText: "Grace" }).getByText("admin")).toBeVisible();
  // The token shown works for the API, and the setup token is spent.
  const me = await fetch(`${lab.api}/v1/me`, { headers: { Authorization: `Bearer ${token}` } });
  expect(me.ok && (await me.json()).role, "the shown token is the admin's").toBe("admin");
  const again = await fetch(`${lab.api}/v1/setup`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ setup_token: setup, name: "Eve", email: "eve@example.org" }),
  });
  expect([409, 401], `the setup token is spent (got ${again.status})`).toContain(again.status);
});
