// The flags Debian's Chromium runs with for the journeys (playwright.config.ts) and the
// benchmark (bench.mjs): no sandbox (CI runs as root), no GPU, and nothing that calls home.
export const chromiumArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
