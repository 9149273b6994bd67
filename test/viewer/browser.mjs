// browser.mjs: what the DHAT checks (check-dhat.mjs, check-firefox.mjs)
// share: their "--name value" arguments, the "PASS name" / "FAIL name:
// why" lines test/viewer/run counts, and a headless Chromium session
// (playwright-core from --work's node_modules, a fresh user data dir,
// the page's errors collected).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";

// The flags this workplace's Chromium runs with (check.mjs says why).
const FLAGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
  "--disable-component-update", "--disable-sync", "--disable-quic",
];

// The arguments; exits with a FAIL line when one of `required` is missing.
export function parseArgs(script, required) {
  const args = {};
  for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
  for (const k of required) {
    if (!args[k]) {
      console.log(`FAIL ${script} arguments: missing --${k}`);
      process.exit(2);
    }
  }
  return args;
}

let failed = 0;
export function check(name, ok, why) {
  if (ok) console.log(`PASS ${name}`);
  else {
    failed++;
    console.log(`FAIL ${name}: ${why}`);
  }
}

// Runs body(page, problems) in a fresh headless Chromium (en-US, so the
// viewers format numbers as "1,234.5"), then exits: 1 if any check
// failed.  problems collects page errors, console errors, dialogs and
// failed requests.
export async function withBrowser(args, timeout, body) {
  const require = createRequire(path.join(path.resolve(args.work), "package.json"));
  const { chromium } = require("playwright-core");
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "viewer-chromium-"));
  let context;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: args.chromium, headless: true, args: FLAGS, locale: "en-US",
      viewport: { width: 1400, height: 900 }, timeout,
    });
    const page = context.pages()[0] || (await context.newPage());
    page.setDefaultTimeout(timeout);
    const problems = [];
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("console", (m) => m.type() === "error" && problems.push(`console error: ${m.text()}`));
    page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
    page.on("dialog", async (d) => {
      problems.push(`dialog: ${d.message()}`);
      await d.dismiss();
    });
    await body(page, problems);
  } catch (e) {
    check("browser session", false, e.message.split("\n")[0]);
  } finally {
    if (context) await context.close().catch(() => {});
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}
