// The DHAT half of test/viewer/run: opens valgrind's DHAT viewer
// (dh_view.html, from Debian's valgrind package, as a file:// page) in
// headless Chromium, loads our DHAT file through its "Load…" file input,
// and checks what the page shows against what the library reported
// (probe.rb's .dhat-expect.json).
//
//   node check-dhat.mjs --work DIR --viewer /usr/libexec/valgrind/dh_view.html
//                       --dhat NAME --expect NAME --chromium PATH
//
// The viewer draws the tree as text: each node a span ("leaf" or
// "internal", "insig" when below its significance threshold) holding its
// lines: "PP 1.2/3 {", "Total: ... bytes (...) in ... blocks (...), avg
// size ..., avg lifetime ... (...)", "Max: ...", "At t-gmax: ...",
// "At t-end: ...", then its frames ("^N:" inherited, "#N:" its own).
// A program point is a significant leaf.  Prints one "PASS name" or
// "FAIL name: why" line per check.  Screenshots go to DIR.
import fs from "node:fs";
import path from "node:path";
import { check, parseArgs, withBrowser } from "./browser.mjs";

const args = parseArgs("check-dhat.mjs", ["work", "viewer", "dhat", "expect", "chromium"]);
const TIMEOUT = 30_000;

// "1,234,567.89" (the viewer formats with the page's locale: en-US here)
const num = (s) => Number(s.replace(/,/g, ""));

// The significant leaves of the tree as the page shows them.
async function programPoints(page) {
  const texts = await page.evaluate(() =>
    [...document.querySelectorAll("span.leaf")].filter((e) => !e.classList.contains("insig")).map((e) => e.textContent));
  return texts.map((text) => {
    const pp = { text };
    let m = text.match(/Total:\s+([\d,.]+) bytes .*? in ([\d,.]+) blocks/);
    if (m) [pp.bytes, pp.blocks] = [num(m[1]), num(m[2])];
    m = text.match(/avg lifetime ([\d,.]+) /);
    if (m) pp.lifetime = num(m[1]);
    m = text.match(/At t-gmax: ([\d,.]+) bytes/);
    if (m) pp.gmax = num(m[1]);
    m = text.match(/At t-end:\s+([\d,.]+) bytes/);
    if (m) pp.end = num(m[1]);
    pp.frames = [...text.matchAll(/[\^#]\d+: (?:0x[0-9A-F]+: )?(.*)/g)].map((f) => f[1].trim());
    return pp;
  });
}

async function sortBy(page, label) {
  await page.selectOption("select", { label });
  await page.waitForFunction((l) => document.title.endsWith(` - ${l}`), label);
}

function top(points, key) {
  return points.filter((p) => p[key] !== undefined).sort((a, b) => b[key] - a[key])[0];
}

const sameFrames = (a, b) => a && b && a.length === b.length && a.every((f, i) => f === b[i]);
const within = (x, want, rel) => Math.abs(x - want) <= Math.max(1, Math.abs(want) * rel);

// One check of a top point: the same frames as the library's, and its
// figures (exact to the byte, lifetimes within rel: live blocks age
// between the file and the library's reading).
function checkTop(what, got, want, fields) {
  if (!want) {
    check(`${what}: the library names one`, false, "expectation missing");
    return;
  }
  check(`${what} is the library's: ${want.frames.slice(0, 2).join(" / ")}`, got && sameFrames(got.frames, want.frames),
    got ? `page shows ${got.frames.slice(0, 3).join(" / ")}` : "no program point shown");
  if (!got) return;
  for (const [label, key, wantValue, rel] of fields) {
    check(`${what}: ${label} ${got[key]} = ${Math.round(wantValue)}`, got[key] !== undefined && within(got[key], wantValue, rel),
      `page shows ${got[key]}, the library ${wantValue}`);
  }
}

const expect = JSON.parse(fs.readFileSync(path.join(args.work, args.expect), "utf8"));
const file = JSON.parse(fs.readFileSync(path.join(args.work, args.dhat), "utf8"));
await withBrowser(args, TIMEOUT, async (page, problems) => {
  const url = `file://${path.resolve(args.viewer)}`;
  console.log(`open ${url}, load ${args.dhat}`);
  await page.goto(url);
  await page.setInputFiles("input[type=file]", path.join(args.work, args.dhat));
  let loaded = true;
  await page.getByText("Invocation {").first().waitFor().catch(() => (loaded = false));
  const pre = loaded ? await page.evaluate(() => document.querySelector("pre").innerText) : "";
  const error = await page.evaluate(() => document.querySelector(".error")?.textContent || "");
  check("DHAT viewer loads the file", loaded && !error && problems.length === 0,
    [loaded ? "" : "no tree shown", error, ...problems].filter(Boolean).join("; ") || "unknown");
  if (!loaded) await page.screenshot({ path: path.join(args.work, "dhat-error.png") });
  else {
    check("the page shows the command and t-gmax", pre.includes(`Command: ${file.cmd}`) &&
      /t-gmax: [\d,]+ slot bytes allocated \([\d.]+% of program duration\)/.test(pre),
      pre.slice(0, 300));

    // 1. Sorted by total bytes: the point that allocated the most.
    await sortBy(page, "Total (bytes)");
    let points = await programPoints(page);
    console.log(`  ${points.length} significant program points shown by total bytes`);
    const byTotal = top(points, "bytes");
    checkTop("top point by total bytes", byTotal, expect.top_total, [
      ["total bytes", "bytes", expect.top_total?.bytes, 0],
      ["total blocks", "blocks", expect.top_total?.blocks, 0],
      ["avg lifetime", "lifetime", expect.top_total?.avg_lifetime, expect.complete ? 0.01 : 0.5],
    ]);
    await page.screenshot({ path: path.join(args.work, "dhat-total.png") });

    // 2. Sorted by bytes at t-gmax: what the heap held at its peak.
    await sortBy(page, "At t-gmax (bytes)");
    points = await programPoints(page);
    checkTop("top point at t-gmax", top(points, "gmax"), expect.top_gmax, [
      ["bytes at t-gmax", "gmax", expect.top_gmax?.gmax, 0],
    ]);
    await page.screenshot({ path: path.join(args.work, "dhat-gmax.png") });

    // 3. Lifetimes: "Total (blocks), short-lived" shows as significant the
    //    points whose blocks lived on average at most tuth; the top one
    //    by blocks, and its lifetime.
    await sortBy(page, "Total (blocks), short-lived");
    points = await programPoints(page);
    const shortLived = top(points, "blocks");
    checkTop("top short-lived point by blocks", shortLived, expect.top_short_lived, [
      ["total blocks", "blocks", expect.top_short_lived?.blocks, 0],
      ["avg lifetime", "lifetime", expect.top_short_lived?.avg_lifetime, expect.complete ? 0.01 : 0.5],
    ]);
    check(`short-lived means an avg lifetime <= tuth (${file.tuth})`,
      points.length > 0 && points.every((p) => p.lifetime <= file.tuth),
      points.filter((p) => p.lifetime > file.tuth).map((p) => `${p.frames[1]}: ${p.lifetime}`).join("; "));
    await page.screenshot({ path: path.join(args.work, "dhat-short-lived.png") });
    check("no errors in the DHAT viewer", problems.length === 0, problems.join("; "));
  }
});
