// The console's performance benchmark (see bench_test.go, which starts Horizon and the stack).
// Prints figures; asserts only that the page did what is measured.
// Env: CONSOLE_URL, API_URL, MEMBER_TOKEN, STACK_ID, FLOOR_STACK_ID, STREAM_FILE, DIST, CHROMIUM;
// TRACE_DIR, when set, keeps a Chrome trace of the last round of each measurement there.
import { chromium } from "playwright-core";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { chromiumArgs } from "./chromium.mjs";
import { signInLink } from "./signin.mjs";

const env = (k) =>
  process.env[k] ??
  (() => {
    throw new Error(`${k} is not set`);
  })();
const [CONSOLE, API, MEMBER, STACK, FLOOR, STREAM, DIST] = [
  "CONSOLE_URL",
  "API_URL",
  "MEMBER_TOKEN",
  "STACK_ID",
  "FLOOR_STACK_ID",
  "STREAM_FILE",
  "DIST",
].map(env);
const TRACE_DIR = process.env.TRACE_DIR;

// 1. Initial JS and CSS, gzip: what index.html loads.
const html = readFileSync(join(DIST, "index.html"), "utf8");
const assets = [...html.matchAll(/(?:src|href)="\.?\/?(assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]);
let gz = 0;
for (const a of assets) gz += gzipSync(readFileSync(join(DIST, a)), { level: 9 }).length;
console.log(`initial JS+CSS: ${assets.join(", ")}: ${(gz / 1024).toFixed(1)} KB gzip (goal ≤ 250 KB)`);

// The server's floor: the same log read without a browser, as SSE and as the NDJSON download.
async function token() {
  const r = await fetch(`${API}/v1/stream-tokens`, {
    method: "POST",
    headers: { Authorization: `Bearer ${MEMBER}`, "Content-Type": "application/json" },
    body: JSON.stringify({ purpose: "logs", stack_id: STACK }),
  });
  return (await r.json()).token;
}
async function timed(url, headers, count) {
  const t = Date.now();
  const r = await fetch(url, { headers });
  let n = 0,
    tail = "";
  for await (const chunk of r.body) {
    const s = tail + Buffer.from(chunk).toString("utf8");
    const parts = s.split("\n");
    tail = parts.pop();
    for (const p of parts) if (count(p)) n++;
    if (n >= 100000) break;
  }
  return [n, Date.now() - t];
}
{
  const [n, ms] = await timed(`${API}/v1/stacks/${STACK}/logs/stream?stream_token=${await token()}`, {}, (l) => l === "event: line");
  console.log(`server floor: ${n} lines as SSE in ${ms} ms`);
  const [m, ms2] = await timed(
    `${API}/v1/stacks/${STACK}/logs`,
    { Authorization: `Bearer ${MEMBER}`, Accept: "application/x-ndjson" },
    (l) => l.startsWith("{"),
  );
  console.log(`server floor: ${m} lines as the NDJSON download in ${ms2} ms`);
}

const browser = await chromium.launch({
  executablePath: env("CHROMIUM"),
  args: ["--headless", ...chromiumArgs, "--enable-precise-memory-info"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
  await page.addInitScript(() => {
    window.__long = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) window.__long.push({ at: e.startTime, ms: e.duration });
    }).observe({ type: "longtask", buffered: true });
  });
  // Sign in first (a separate page load), so the measured navigation is the detail alone.
  await page.goto(await signInLink(CONSOLE, API, MEMBER));
  await page.getByRole("heading", { name: "Stacks" }).waitFor();

  // ROUNDS (default 5) of each measurement: the goals are medians and "in every round".
  const rounds = Number(process.env.ROUNDS ?? 5);
  const count = () =>
    page.evaluate(() => Number(/^(\d+) lines/.exec(document.querySelector(".log-tools [aria-live]")?.textContent ?? "")?.[1] ?? 0));
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

  // A Chrome trace of what fn does (the last round of a measurement), when TRACE_DIR is set.
  const traced = async (name, last, fn) => {
    if (!TRACE_DIR || !last) return fn();
    await browser.startTracing(page, { path: join(TRACE_DIR, `${name}.json`), screenshots: false });
    try {
      return await fn();
    } finally {
      await browser.stopTracing();
      console.log(`trace: ${join(TRACE_DIR, `${name}.json`)}`);
    }
  };
  // open navigates to a stack's detail and waits until it is interactive: the cards and the
  // log's end shown and a click (Pause) answered. It says when each came, and where the time
  // went: when the page's requests for the stack, its pipeline and its log's tail ended
  // (Resource Timing, from the navigation) and the long tasks until then.
  const open = async (stack, round) => {
    await page.evaluate(() => {
      window.__long = [];
    });
    const t0 = Date.now();
    await page.goto(`${CONSOLE}/?fresh=${round}#/stacks/${stack}`);
    await page.locator(".card").first().waitFor({ timeout: 60_000 });
    const cards = Date.now() - t0;
    await page.locator(".log-lines .line").first().waitFor({ timeout: 60_000 });
    await page.getByRole("button", { name: "Pause" }).click();
    await page.getByRole("button", { name: "Resume" }).waitFor();
    const interactive = Date.now() - t0;
    const where = await page.evaluate((id) => {
      const end = (re) => {
        const r = performance.getEntriesByType("resource").find((e) => re.test(e.name));
        return r ? `${r.responseEnd.toFixed(0)} ms` : "-";
      };
      const long = window.__long.filter((e) => e.ms > 50);
      return `stack ${end(new RegExp(`/v1/stacks/${id}$`))}, pipeline ${end(/\/pipeline/)}, log tail ${end(/\/logs\?.*tail=/)}; long tasks ${long.length} (${long.map((e) => e.ms.toFixed(0)).join(", ") || "none"} ms)`;
    }, stack);
    return { cards, interactive, where };
  };

  // 2. Navigation to an interactive detail with a 100 000-line log, and to one with the
  // example's few hundred lines (the floor: what the page takes on this machine whatever its
  // log); then every line of the long log loaded (the earlier ones behind).
  const interactives = [];
  const floors = [];
  for (let round = 1; round <= rounds; round++) {
    const floor = await traced("floor", round === rounds, () => open(FLOOR, `floor-${round}`));
    floors.push(floor.interactive);
    console.log(
      `round ${round}: floor (${await count()} lines): interactive after ${floor.interactive} ms; requests ended: ${floor.where}`,
    );
    const t0 = Date.now();
    const big = await traced("interactive", round === rounds, () => open(STACK, round));
    interactives.push(big.interactive);
    await page.getByRole("button", { name: "Resume" }).click();
    await page.waitForFunction(
      () => /^(\d+) lines/.exec(document.querySelector(".log-tools [aria-live]")?.textContent ?? "")?.[1] >= 100000,
      null,
      { timeout: 120_000, polling: 50 },
    );
    const full = Date.now() - t0;
    const t1 = Date.now();
    await page.getByRole("button", { name: "Pause" }).click();
    await page.getByRole("button", { name: "Resume" }).waitFor();
    await page.getByRole("button", { name: "Resume" }).click();
    const click = Date.now() - t1;
    const longBefore = await page.evaluate(() => window.__long.filter((e) => e.ms > 50));
    console.log(
      `round ${round}: cards after ${big.cards} ms; interactive (the log's end shown, Pause answered) after ${big.interactive} ms (requests ended: ${big.where}); ${await count()} lines loaded after ${full} ms; a click then answered in ${click} ms; long tasks while loading: ${longBefore.length}${longBefore.length ? `, longest ${Math.max(...longBefore.map((e) => e.ms)).toFixed(0)} ms` : ""}`,
    );
  }
  console.log(
    `detail interactive: p50 ${median(interactives)} ms over ${rounds} rounds (goal ≤ 700 ms), all ${interactives.join(", ")} ms; ` +
      `floor (the example's log) p50 ${median(floors)} ms, all ${floors.join(", ")} ms; ratio ${(median(interactives) / median(floors)).toFixed(2)}`,
  );

  // 3. 1 000 lines/s for 20 s, ROUNDS times on the same page: a run again whose script prints
  // them. The buffer keeps at most 200 000 lines, so a round waits for 20 000 more or the cap.
  writeFileSync(STREAM, "1");
  let clean = 0;
  for (let round = 1; round <= rounds; round++) {
    const before = await count();
    const mark = await page.evaluate(() => performance.now());
    for (let tries = 0; ; tries++) {
      const r = await fetch(`${API}/v1/stacks/${STACK}/jobs/app/executions/0/run-again`, {
        method: "POST",
        headers: { Authorization: `Bearer ${MEMBER}` },
      });
      if (r.status === 202) break;
      // 409 while the previous round's run ends.
      if (r.status !== 409 || tries > 120) throw new Error(`run again: ${r.status} ${await r.text()}`);
      await new Promise((res) => setTimeout(res, 250));
    }
    const want = Math.min(before + 20000, 200000);
    await traced("streaming", round === rounds, () =>
      page.waitForFunction(
        (n) => /^(\d+) lines/.exec(document.querySelector(".log-tools [aria-live]")?.textContent ?? "")?.[1] >= n,
        want,
        { timeout: 180_000, polling: 200 },
      ),
    );
    const end = await page.evaluate(() => performance.now());
    const during = await page.evaluate(([a, b]) => window.__long.filter((e) => e.at >= a && e.at <= b && e.ms > 50), [mark, end]);
    if (during.length === 0) clean++;
    console.log(
      `round ${round}: while receiving 20 000 lines at ~1 000/s (${((end - mark) / 1000).toFixed(1)} s): ${during.length} long tasks > 50 ms${during.length ? `, longest ${Math.max(...during.map((e) => e.ms)).toFixed(0)} ms` : ""}`,
    );
  }
  rmSync(STREAM);
  console.log(`1 000 lines/s: ${clean} of ${rounds} rounds without a long task (goal: ${rounds} of ${rounds})`);

  // 4. Heap after that, after a garbage collection.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("HeapProfiler.collectGarbage");
  const { usedSize } = await cdp.send("Runtime.getHeapUsage");
  console.log(
    `heap after: ${(usedSize / 1048576).toFixed(1)} MB with ${await page.locator(".log-tools [aria-live]").textContent()} (the buffer keeps at most 200 000 lines)`,
  );
} finally {
  await browser.close();
}
