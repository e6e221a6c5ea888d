// The console's journeys (e2e/*.spec.ts) in Debian's Chromium against a real Horizon. Go starts
// Horizon and runs them: console_test.go (`go test ./deploy/web -run TestConsole`) starts the
// API, the workers, Terraform and the Proxmox sandbox, serves the built console, and runs
// `npx playwright test --project lab` (and then `--project first-admin` against an API with no
// admin yet) with the URLs and tokens in the environment; see e2e/fixtures.ts.
//
// The lab's journeys share one Horizon and build on each other (web-e2e is made, deployed,
// edited, then removed), so they run one at a time in their files' order (01-…, 02-…), and the
// first failure stops the run. What a failed journey left (its trace, a screenshot of each
// page) is kept under e2e/out/results, which git ignores.
import { defineConfig } from "@playwright/test";
import { chromiumArgs } from "./e2e/chromium.mjs";

export default defineConfig({
  testDir: "e2e",
  outputDir: "e2e/out/results",
  workers: 1,
  fullyParallel: false,
  maxFailures: 1,
  retries: 0,
  forbidOnly: true,
  // A journey deploys and re-applies stacks on the sandbox: minutes, not seconds.
  timeout: 8 * 60_000,
  expect: { timeout: 20_000 },
  reporter: [["list"]],
  use: {
    browserName: "chromium",
    launchOptions: {
      executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
      args: chromiumArgs,
    },
    headless: true,
    viewport: { width: 1360, height: 900 },
    actionTimeout: 20_000,
    navigationTimeout: 20_000,
    // The trace's DOM snapshots, without its screencast: the journeys run on busy machines.
    trace: { mode: "retain-on-failure", screenshots: false },
    screenshot: { mode: "only-on-failure", fullPage: true },
  },
  projects: [
    { name: "lab", testMatch: /\d\d-.*\.spec\.ts$/ },
    { name: "first-admin", testMatch: "first-admin.spec.ts" },
  ],
});
