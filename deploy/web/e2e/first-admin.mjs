// The first-admin path in real Chromium against an API with no admin yet (console_test.go
// starts it): the setup token the API logged, pasted on the sign-in screen, asks for a name and
// an email, makes the first admin, shows their API token once, and signs in with it.
//
// Env: CONSOLE_URL, API_URL, SETUP_TOKEN, OUT_DIR, CHROMIUM.
import { chromium } from "playwright-core";
import { join } from "node:path";

const env = (k) =>
  process.env[k] ??
  (() => {
    throw new Error(`${k} is not set`);
  })();
const [CONSOLE, API, SETUP, OUT] = ["CONSOLE_URL", "API_URL", "SETUP_TOKEN", "OUT_DIR"].map(env);
const check = (cond, msg) => {
  if (!cond) throw new Error(`check failed: ${msg}`);
};

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
  const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
  page.setDefaultTimeout(20_000);
  await page.goto(CONSOLE);
  await page.getByLabel("API token").fill(SETUP);
  await page.getByLabel("Your name").fill("Grace");
  await page.getByLabel("Your email").fill("grace@example.org");
  await page.screenshot({ path: join(OUT, "00-first-admin.png"), fullPage: true });
  await page.getByRole("button", { name: "Create the first admin" }).click();
  await page.getByRole("heading", { name: "You are Horizon's first admin" }).waitFor();
  const token = (await page.locator("pre.token").textContent()).trim();
  check(token.startsWith("hzn_"), `an API token is shown once (got ${token.slice(0, 4)}…)`);
  check(!page.url().includes(token), "the token is never in the URL");
  await page.getByRole("button", { name: "Continue to the console" }).click();
  await page.getByRole("heading", { name: "Stacks" }).waitFor();
  await page.locator(".who", { hasText: "Grace" }).getByText("admin").waitFor();
  // The token shown works for the API, and the setup token is spent.
  const me = await fetch(`${API}/v1/me`, { headers: { Authorization: `Bearer ${token}` } });
  check(me.ok && (await me.json()).role === "admin", "the shown token is the admin's");
  const again = await fetch(`${API}/v1/setup`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ setup_token: SETUP, name: "Eve", email: "eve@example.org" }),
  });
  check(again.status === 409 || again.status === 401, `the setup token is spent (got ${again.status})`);
  console.log("the first admin was made in the console and signed in");
} finally {
  await browser.close();
}
