// A tiny static server for test/viewer/run, on 127.0.0.1 only.
//
//   node serve.mjs --app DIR --profiles DIR --port-file FILE [--lifetime SECONDS] [--spa 1]
//
// GET /PATH  the file under --app (speedscope's dist/release) if there is
//            one, else the file under --profiles (our pprof output), sent
//            as raw bytes (no Content-Encoding: the viewer gunzips itself);
//            with --spa, the app's index.html for any other path (the
//            Firefox Profiler routes by path: /from-url/...)
//
// Listens on an ephemeral port, writes it to --port-file, and exits by
// itself after --lifetime seconds (default 120) even if nobody kills it.
import http from "node:http";
import fs from "node:fs";
import path from "node:path";

const args = {};
for (let i = 2; i < process.argv.length; i += 2) {
  args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
}
for (const k of ["app", "profiles", "port-file"]) {
  if (!args[k]) {
    console.error(`serve.mjs: missing --${k}`);
    process.exit(2);
  }
}
const lifetime = Number(args.lifetime || 120);
const types = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".wasm": "application/wasm",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

function resolve(root, rel) {
  const full = path.resolve(root, "." + path.posix.normalize("/" + rel));
  return full.startsWith(path.resolve(root) + path.sep) ? full : null;
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://127.0.0.1");
  let p = decodeURIComponent(url.pathname);
  if (p === "/") p = "/index.html";
  let file = resolve(args.app, p);
  if (!file || !fs.existsSync(file)) file = resolve(args.profiles, p);
  if (args.spa && (!file || !fs.existsSync(file))) file = resolve(args.app, "/index.html");
  fs.readFile(file || "", (err, data) => {
    if (err || !file) {
      res.writeHead(404, { "Content-Type": "text/plain" });
      res.end("not found\n");
      console.log(`serve: 404 ${p}`);
      return;
    }
    res.writeHead(200, {
      "Content-Type": types[path.extname(file)] || "application/octet-stream",
      "Content-Length": data.length,
      "Cache-Control": "no-store",
    });
    res.end(data);
  });
});

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  fs.writeFileSync(args["port-file"], `${port}\n`);
  console.log(`serve: http://127.0.0.1:${port}/ (exits in ${lifetime}s)`);
});
setTimeout(() => {
  console.log("serve: lifetime over, exiting");
  process.exit(0);
}, lifetime * 1000).unref();
process.on("SIGTERM", () => process.exit(0));
