// The fixtures every console journey uses. The backend is started by console_test.go (Go is the
// one way Horizon is started for tests: labtest, workertest, the sandbox), which runs
// `npx playwright test` with the lab in the environment:
//
//   CONSOLE_URL, API_URL, ADMIN_TOKEN, MEMBER_TOKEN, VIEWER_TOKEN (the lab project), or
//   CONSOLE_URL, API_URL, SETUP_TOKEN (the first-admin project), and CHROMIUM.
//
// - lab: those URLs and tokens;
// - api: a request to the API as one of the tokens, failing unless it is 2xx;
// - signIn: a new browser context signed in by a link, as `go tool task up` prints one;
// - fresh: a new browser context signed in as nobody;
// - axe: a full-page screenshot of a screen (in the test's output directory, under e2e/out/) and axe-core's
//   check of it: no serious or critical violation;
// - every context made here records the origins it requests, and a test fails if one of its
//   pages asked any host but the console and the API.
import { generateKeyPairSync } from "node:crypto";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { type BrowserContext, test as base, expect, type Page } from "@playwright/test";
import { signInLink as link } from "./signin.mjs";

export { expect };

export type Lab = { console: string; api: string; admin: string; member: string; viewer: string };
// biome-ignore lint/suspicious/noExplicitAny: the API's JSON, which each journey reads as it needs.
export type Api = <T = any>(token: string, method: string, path: string, body?: unknown) => Promise<T>;

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** env is a variable console_test.go sets. */
export function env(k: string): string {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set: console_test.go runs the journeys with the lab in the environment`);
  return v;
}

/** signInLink is the link `go tool task up` prints: a one-time code in the fragment, never the token. */
export const signInLink = (lab: Pick<Lab, "console" | "api">, token: string, next?: string) => link(lab.console, lab.api, token, next);

type Fixtures = {
  lab: Lab;
  api: Api;
  hosts: Set<string>;
  fresh: () => Promise<Page>;
  signIn: (token: string, next?: string) => Promise<Page>;
  axe: (page: Page, name: string) => Promise<void>;
};

export const test = base.extend<Fixtures>({
  // biome-ignore lint/correctness/noEmptyPattern: Playwright's fixtures take their dependencies destructured.
  lab: async ({}, use) => {
    await use({
      console: env("CONSOLE_URL"),
      api: env("API_URL"),
      admin: process.env.ADMIN_TOKEN ?? "",
      member: process.env.MEMBER_TOKEN ?? "",
      viewer: process.env.VIEWER_TOKEN ?? "",
    });
  },
  api: async ({ lab }, use) => {
    await use(async (token, method, path, body) => {
      const r = await fetch(lab.api + path, {
        method,
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await r.text();
      if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
      return text ? JSON.parse(text) : null;
    });
  },
  // The origins the test's pages requested; checked when the test ends.
  hosts: async ({ lab }, use) => {
    const hosts = new Set<string>();
    await use(hosts);
    const foreign = [...hosts].filter((h) => h !== lab.console && h !== lab.api && !h.startsWith("data:") && h !== "null");
    expect(foreign, "no request to any host but the console and the API").toEqual([]);
  },
  // The page's uncaught errors and console errors, printed when the test fails: what broke in
  // the browser, beside what the test saw.
  page: async ({ page }, use, testInfo) => {
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(`uncaught: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(`console: ${m.text()}`);
    });
    await use(page);
    if (testInfo.status !== testInfo.expectedStatus && errors.length > 0) {
      console.log(`${testInfo.title}: the page's errors, first to last:\n  ${errors.slice(-30).join("\n  ")}`);
    }
  },
  context: async ({ context, hosts, lab }, use) => {
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: lab.console });
    context.on("request", (r) => hosts.add(new URL(r.url()).origin));
    await use(context);
  },
  fresh: async ({ browser, hosts, lab }, use, testInfo) => {
    const made: BrowserContext[] = [];
    await use(async () => {
      const ctx = await browser.newContext({ viewport: testInfo.project.use.viewport });
      await ctx.grantPermissions(["clipboard-read", "clipboard-write"], { origin: lab.console });
      ctx.on("request", (r) => hosts.add(new URL(r.url()).origin));
      made.push(ctx);
      return ctx.newPage();
    });
    // Playwright has screenshotted each of their pages if the test failed.
    for (const ctx of made) await ctx.close();
  },
  signIn: async ({ fresh, lab }, use) => {
    await use(async (token, next) => {
      const page = await fresh();
      await page.goto(await signInLink(lab, token, next));
      return page;
    });
  },
  // biome-ignore lint/correctness/noEmptyPattern: Playwright's fixtures take their dependencies destructured.
  axe: async ({}, use, testInfo) => {
    let shots = 0;
    await use(async (page, name) => {
      await page.screenshot({ path: testInfo.outputPath(`${String(++shots).padStart(2, "0")}-${name}.png`), fullPage: true });
      await page.evaluate(axeSource);
      const res = await page.evaluate(() =>
        (window as unknown as { axe: { run: (d: Document, o: object) => Promise<AxeResults> } }).axe.run(document, {
          resultTypes: ["violations"],
        }),
      );
      const bad = res.violations
        .filter((v) => v.impact === "serious" || v.impact === "critical")
        .map(
          (v) =>
            `${v.id} (${v.impact}): ${v.nodes
              .slice(0, 3)
              .map((n) => n.target.join(" "))
              .join(", ")}`,
        );
      expect(bad, `axe on ${name}: no serious or critical violation`).toEqual([]);
    });
  },
});

type AxeResults = { violations: { id: string; impact: string | null; nodes: { target: string[] }[] }[] };

/** sshPublicKey is a new ed25519 key's authorized_keys line (its private half is thrown away). */
export function sshPublicKey(comment: string): string {
  const { publicKey } = generateKeyPairSync("ed25519");
  const raw = Buffer.from(publicKey.export({ format: "jwk" }).x as string, "base64url");
  const field = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  return `ssh-ed25519 ${Buffer.concat([field(Buffer.from("ssh-ed25519")), field(raw)]).toString("base64")} ${comment}`;
}

/** stackNamed is the id of the stack the journeys before this one made, by its name. */
export async function stackNamed(api: Api, token: string, name: string): Promise<string> {
  const s = (await api<{ items: { id: string; name: string }[] }>(token, "GET", "/v1/stacks?limit=200")).items.find((s) => s.name === name);
  expect(s, `the stack ${name} made by an earlier journey`).toBeTruthy();
  return s!.id;
}

/** hang makes the example's app script hang (console_test.go's HANG_FILE) until unhang. */
export const hang = () => writeFileSync(env("HANG_FILE"), "hang");
export const unhang = () => rmSync(env("HANG_FILE"), { force: true });
