// The browser half of test/viewer/run: opens speedscope (served on
// 127.0.0.1) in headless Chromium with our pprof profile, and checks that
// our frame names are rendered.
//
//   node check.mjs --work DIR --base http://127.0.0.1:PORT --profile NAME
//                  --chromium PATH --expect NAME [--expect NAME ...]
//
// playwright-core is loaded from DIR/node_modules (test/viewer/run installs
// it there).  Prints one "PASS name" or "FAIL name: why" line per check;
// test/viewer/run counts them.  Screenshots go to DIR.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { createRequire } from "node:module";

const args = { expect: [] };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, "");
  if (k === "expect") args.expect.push(process.argv[i + 1]);
  else args[k] = process.argv[i + 1];
}
for (const k of ["work", "base", "profile", "chromium"]) {
  if (!args[k]) {
    console.log(`FAIL check.mjs arguments: missing --${k}`);
    process.exit(2);
  }
}
const require = createRequire(path.join(path.resolve(args.work), "package.json"));
const { chromium } = require("playwright-core");

// The flags this workplace's Chromium runs with; playwright adds its own
// automation flags.  --user-data-dir is given through launchPersistentContext.
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--no-first-run",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
];
const TIMEOUT = 30_000;

let failed = 0;
function pass(name) {
  console.log(`PASS ${name}`);
}
function fail(name, why) {
  failed++;
  console.log(`FAIL ${name}: ${why}`);
}
function check(name, ok, why) {
  ok ? pass(name) : fail(name, why);
}

// Records every string speedscope draws on a 2D canvas: the flame chart's
// rectangles are WebGL, but its labels are drawn with fillText.
function hookFillText() {
  window.__drawnText = new Set();
  const orig = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
    if (window.__drawnText.size < 100000) window.__drawnText.add(String(text));
    return orig.call(this, text, ...rest);
  };
}

async function drawnText(page) {
  return page.evaluate(() => [...window.__drawnText]);
}

// Waits until every expected name has been drawn on a canvas, or the
// timeout passes; returns the names still missing.
async function waitDrawn(page, names, ms = TIMEOUT) {
  const deadline = Date.now() + ms;
  for (;;) {
    const drawn = new Set(await drawnText(page));
    const missing = names.filter((n) => !drawn.has(n));
    if (missing.length === 0 || Date.now() > deadline) return missing;
    await page.waitForTimeout(250);
  }
}

async function shot(page, file) {
  const full = path.join(args.work, file);
  await page.screenshot({ path: full });
  const size = fs.statSync(full).size;
  check(`screenshot ${file}`, size > 5000, `only ${size} bytes`);
  return full;
}

// What the viewer should show as the profile's total: our own reading of
// the pprof file, picking the sample type as speedscope does (the one
// named by default_sample_type, else the last), summed over all samples,
// and formatted like speedscope's byte formatter.
function varint(buf, pos) {
  let v = 0n, shift = 0n;
  for (;;) {
    const c = buf[pos++];
    v |= BigInt(c & 0x7f) << shift;
    shift += 7n;
    if (c < 0x80) return [v, pos];
  }
}
function* fields(buf) {
  let pos = 0;
  while (pos < buf.length) {
    let key, v, len;
    [key, pos] = varint(buf, pos);
    const field = Number(key >> 3n), wire = Number(key & 7n);
    if (wire === 0) [v, pos] = varint(buf, pos);
    else if (wire === 2) {
      [len, pos] = varint(buf, pos);
      v = buf.subarray(pos, pos + Number(len));
      pos += Number(len);
    } else if (wire === 1) (v = buf.subarray(pos, pos + 8)), (pos += 8);
    else if (wire === 5) (v = buf.subarray(pos, pos + 4)), (pos += 4);
    else throw new Error(`bad wire type ${wire}`);
    yield [field, wire, v];
  }
}
function expectedTotal(file) {
  const buf = zlib.gunzipSync(fs.readFileSync(file));
  const strings = [], types = [], samples = [];
  let defaultType = 0n;
  for (const [f, , v] of fields(buf)) {
    if (f === 6) strings.push(Buffer.from(v).toString("utf8"));
    else if (f === 1) {
      const t = {};
      for (const [g, , w] of fields(v)) t[g] = Number(w);
      types.push({ type: t[1] || 0, unit: t[2] || 0 });
    } else if (f === 2) samples.push(v);
    else if (f === 14) defaultType = v;
  }
  let index = types.findIndex((t) => BigInt(t.type) === defaultType);
  if (index < 0) index = types.length - 1;
  let total = 0;
  for (const s of samples) {
    for (const [g, wire, v] of fields(s)) {
      if (g !== 2) continue;
      const values = [];
      if (wire === 2) for (let p = 0; p < v.length; ) { let x; [x, p] = varint(v, p); values.push(x); }
      else values.push(v);
      if (values.length > index) total += Number(BigInt.asIntN(64, values[index]));
    }
  }
  const unit = strings[types[index].unit];
  let text = String(total);
  if (unit === "bytes") {
    let e = total;
    text = e < 1024 ? `${e.toFixed(0)} B` : (e /= 1024) < 1024 ? `${e.toFixed(2)} KB`
      : (e /= 1024) < 1024 ? `${e.toFixed(2)} MB` : `${(e / 1024).toFixed(2)} GB`;
  }
  return { type: strings[types[index].type], unit, total, text };
}

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "viewer-chromium-"));
let context;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: args.chromium,
    headless: true,
    args: FLAGS,
    viewport: { width: 1400, height: 800 },
    timeout: TIMEOUT,
  });
  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(TIMEOUT);
  const problems = [];
  page.on("dialog", async (d) => {
    problems.push(`dialog: ${d.message()}`);
    await d.dismiss();
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error: ${m.text()}`);
  });
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  await page.addInitScript(hookFillText);

  const profileURL = `${args.base}/${args.profile}`;
  const url = `${args.base}/index.html#profileURL=${profileURL}`;
  console.log(`open ${url}`);
  const t0 = Date.now();
  await page.goto(url);

  // 1. The profile loads: speedscope names the file in its toolbar and
  //    offers its three views; no alert, no error page.
  let loaded = true;
  try {
    await page.getByText("Sandwich").first().waitFor();
    await page.getByText(args.profile).first().waitFor();
  } catch (e) {
    loaded = false;
  }
  const body = await page.evaluate(() => document.body.innerText);
  const errorShown = /Something went wrong|Unrecognized format|Failed to/i.test(body);
  check(
    "speedscope imports the pprof profile",
    loaded && !errorShown && problems.length === 0,
    [loaded ? "" : "profile view never appeared", ...problems, errorShown ? `page says: ${body.slice(0, 300)}` : ""]
      .filter(Boolean)
      .join("; ") || "unknown"
  );
  if (!loaded) await shot(page, "speedscope-error.png");

  // 2. Flame graph ("Left Heavy": stacks merged, heaviest first).  The
  //    labels are canvas text, so check what is drawn from now on (the
  //    "Time Order" view shown first has drawn its own).
  if (loaded) {
    await page.evaluate(() => window.__drawnText.clear());
    await page.getByText("Left Heavy").first().click();
    const missing = await waitDrawn(page, args.expect);
    if (missing.length === 0) console.log(`  our labels drawn ${Date.now() - t0} ms after opening the page`);
    for (const name of args.expect) {
      check(`flame graph draws ${name}`, !missing.includes(name), "not among the labels drawn");
    }
    await page.waitForTimeout(300);
    await shot(page, "flamegraph.png");

    // 3. Sandwich view: a table of functions, names as DOM text.
    await page.getByText("Sandwich").first().click();
    await page.getByText(args.expect[0], { exact: true }).first().waitFor().catch(() => {});
    const table = await page.evaluate(() => document.body.innerText);
    try {
      const want = expectedTotal(path.join(args.work, args.profile));
      console.log(`  speedscope shows sample type ${want.type} (${want.unit}); profile total ${want.total} = ${want.text}`);
      check(`sandwich total is the profile's ${want.type} total (${want.text})`,
        table.includes(`${want.text} (100%)`), "no row with that total at 100%");
    } catch (e) {
      fail("sandwich total", `could not read ${args.profile}: ${e.message}`);
    }
    for (const name of args.expect) {
      check(`sandwich table lists ${name}`, table.split("\n").some((l) => l.trim() === name), "no row with that name");
    }
    // Select our method: the sandwich then draws its callers and callees.
    const row = page.getByText(args.expect[0], { exact: true }).first();
    if (await row.count()) {
      await row.click();
      await page.waitForTimeout(500);
    }
    await shot(page, "sandwich.png");
    check("no errors in the page", problems.length === 0, problems.join("; "));
  }
} catch (e) {
  fail("browser session", e.message.split("\n")[0]);
} finally {
  if (context) await context.close().catch(() => {});
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
