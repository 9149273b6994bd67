// The Firefox Profiler half of test/viewer/run (when FIREFOX_PROFILER
// names a build of it: see README.md): opens the app, served on
// 127.0.0.1 with our DHAT file, at /from-url/<file>, in headless
// Chromium, and checks what its call tree shows against what the library
// reported (probe.rb's .dhat-expect.json).
//
//   node check-firefox.mjs --work DIR --base http://127.0.0.1:PORT --dhat NAME
//                          --expect NAME --chromium PATH
//
// The importer makes four threads of one process, a track each: "Total
// Bytes", "Maximum Bytes", "Bytes at Global Max", "Bytes at End" (the
// points' tb, mb, gb, eb), all under a root function named by the
// command.  The call tree's rows carry aria-level and an aria-label
// "NAME, total size is N bytes (P%), ...".  Prints one "PASS name" or
// "FAIL name: why" line per check.  Screenshots go to DIR.
import fs from "node:fs";
import path from "node:path";
import { check, parseArgs, withBrowser } from "./browser.mjs";

const args = parseArgs("check-firefox.mjs", ["work", "base", "dhat", "expect", "chromium"]);
const TIMEOUT = 60_000;
const THREADS = { total: 0, max: 1, gmax: 2, end: 3 };

// The call tree rows drawn now: [{ id, level, name, total }]
async function rows(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll(".treeViewRowScrolledColumns")].map((r) => {
      const m = (r.getAttribute("aria-label") || "").match(/^(.*), total size is ([\d,]+) bytes/);
      return { id: r.id, level: Number(r.getAttribute("aria-level")), name: m ? m[1] : "",
               total: m ? Number(m[2].replace(/,/g, "")) : NaN };
    }));
}

// Every row of the tree: the list draws only what is in view, so scroll
// it from top to bottom, keeping rows in order (by their position).
async function allRows(page) {
  const seen = new Map();
  await page.evaluate(() => (document.querySelector(".treeViewBody").scrollTop = 0));
  for (let i = 0; i < 2000; i++) {
    await page.waitForTimeout(50);
    const top = await page.evaluate(() => document.querySelector(".treeViewBody").scrollTop);
    const drawn = await page.evaluate(() => [...document.querySelectorAll(".treeViewRowScrolledColumns")]
      .map((r) => [r.id, r.offsetTop]));
    const now = await rows(page);
    now.forEach((r, j) => seen.set(r.id, { ...r, at: drawn[j][1] }));
    const done = await page.evaluate(() => {
      const b = document.querySelector(".treeViewBody");
      if (b.scrollTop + b.clientHeight >= b.scrollHeight) return true;
      b.scrollTop += b.clientHeight / 2;
      return false;
    });
    if (done || (await page.evaluate(() => document.querySelector(".treeViewBody").scrollTop)) === top) break;
  }
  return [...seen.values()].sort((a, b) => a.at - b.at);
}

async function openTree(page, thread, inverted, search = "") {
  const profile = encodeURIComponent(`${args.base}/${args.dhat}`);
  const query = `thread=${thread}${inverted ? "&invertCallstack" : ""}${search ? `&search=${encodeURIComponent(search)}` : ""}`;
  await page.goto(`${args.base}/from-url/${profile}/calltree/?${query}`);
  await page.locator(".treeViewRowScrolledColumns").first().waitFor();
  return rows(page);
}

// A kind frame's text is "NAME (WHERE)"; the profiler shows NAME.
const nameOf = (frame) => frame.replace(/ \([^()]*\)$/, "");

const expect = JSON.parse(fs.readFileSync(path.join(args.work, args.expect), "utf8"));
const file = JSON.parse(fs.readFileSync(path.join(args.work, args.dhat), "utf8"));
await withBrowser(args, TIMEOUT, async (page, problems) => {
  // 1. It imports the file: the root is the command, under the product
  //    name "<cmd> (dhat)"; the total is every point's total bytes.
  let tree = [];
  try {
    tree = await openTree(page, THREADS.total, false);
  } catch (e) {
    problems.push(`no call tree: ${e.message.split("\n")[0]}`);
  }
  const body = await page.evaluate(() => document.body.innerText);
  check("Firefox Profiler imports the DHAT file", tree.length > 0 && body.includes(`${file.cmd} (dhat)`) &&
    ["Total Bytes", "Maximum Bytes", "Bytes at Global Max", "Bytes at End"].every((t) => body.includes(t)),
    [...problems, body.slice(0, 200)].join("; "));
  if (tree.length) {
    const root = tree.find((r) => r.level === 1);
    // (each point is rounded once in the file: the sum may differ by up to half a byte a point)
    check(`its root is the command, total ${root.total} = the library's ${Math.round(expect.total_bytes)} bytes`,
      root.name === file.cmd && Math.abs(root.total - expect.total_bytes) <= expect.points / 2 + 1,
      `root ${root.name}: ${root.total}`);

    // 2. Inverted, the roots are what was allocated (our innermost
    //    frames), heaviest first, each the library's sum of its points.
    const kinds = Object.entries(expect.kinds).sort((a, b) => b[1].bytes - a[1].bytes);
    tree = await openTree(page, THREADS.total, true);
    const tops = tree.filter((r) => r.level === 1);
    check(`inverted, the heaviest root is ${nameOf(kinds[0][0])}`, tops[0]?.name === nameOf(kinds[0][0]),
      `shows ${tops.map((r) => r.name).join(", ")}`);
    // (the heaviest ten: what a reader sees without scrolling)
    for (const [kind, want] of kinds.slice(0, 10)) {
      const row = tops.find((r) => r.name === nameOf(kind));
      check(`${nameOf(kind)}: ${row?.total} = ${Math.round(want.bytes)} bytes allocated`,
        row && Math.abs(row.total - want.bytes) <= want.points / 2 + 1, row ? `shows ${row.total}` : "no such root");
    }
    await page.screenshot({ path: path.join(args.work, "firefox-total.png") });
    // the top point by total bytes is a path in that tree: its frames,
    // innermost first, each a level deeper.  Stacks filtered to those
    // through its allocating function, every node expanded ("*" on the
    // root), the rows read by scrolling.
    const wantPath = expect.top_total.frames.map(nameOf);
    tree = await openTree(page, THREADS.total, true, wantPath[1]);
    // (Home selects the first root; "*" toggles all its descendants, so
    // collapse it first; the key goes in as the tree's own keydown, as a
    // typed "*" carries Shift)
    await page.focus(".treeViewBody");
    await page.keyboard.press("Home");
    await page.keyboard.press("ArrowLeft");
    await page.evaluate(() =>
      document.querySelector(".treeViewBody").dispatchEvent(new KeyboardEvent("keydown", { key: "*", bubbles: true })));
    tree = await allRows(page);
    let at = tree.findIndex((r) => r.level === 1 && r.name === wantPath[0]), found = at >= 0;
    for (let i = 1; found && i < wantPath.length; i++) {
      const next = tree.findIndex((r, j) => j > at && r.level === i + 1 && r.name === wantPath[i]);
      const stop = tree.findIndex((r, j) => j > at && r.level <= i);
      found = next >= 0 && (stop < 0 || next < stop);
      at = next;
    }
    check(`the top point by total bytes is a path: ${wantPath.slice(0, 2).join(" <- ")} ... (${wantPath.length} frames)`,
      found && Math.abs(tree[at].total - expect.top_total.bytes) <= 1,
      found ? `its total ${tree[at].total}` : `not among ${tree.length} rows`);
    await page.screenshot({ path: path.join(args.work, "firefox-total.png") });

    // 3. "Bytes at Global Max": the peak's live set, by what was allocated.
    tree = await openTree(page, THREADS.gmax, true);
    const peakKinds = Object.entries(expect.kinds).sort((a, b) => b[1].gmax - a[1].gmax);
    const top = tree.find((r) => r.level === 1);
    check(`at the global max the heaviest root is ${nameOf(peakKinds[0][0])}, ${Math.round(peakKinds[0][1].gmax)} bytes`,
      top?.name === nameOf(peakKinds[0][0]) && Math.abs(top.total - peakKinds[0][1].gmax) <= peakKinds[0][1].points / 2 + 1,
      top ? `shows ${top.name}: ${top.total}` : "no rows");
    await page.screenshot({ path: path.join(args.work, "firefox-gmax.png") });
  }
  check("no errors in the Firefox Profiler", problems.length === 0, problems.join("; "));
});
