// Hostile model output in a real browser engine (issue 13 item 4; RELIABILITY UI-04..06).
// Owns: serving the PRODUCTION build (ui/dist) on 127.0.0.1 with the app's own Content-Security-Policy
// (read from src-tauri/tauri.conf.json, so the two never drift) as a response header; driving Debian's
// Chromium through playwright-core (DESKTOP-TESTING.md §6) against the browser mock, whose test hook
// (globalThis.__k3Mock, ui/src/api/browserMock.ts) makes each reply exactly one payload of
// tests/payloads.mjs; and judging each rendered reply.
// A payload fails when: it set window.__pwned; any request left the page other than for a file of
// ui/dist (every request is logged, by the server and by the browser); a securitypolicyviolation
// fired (the sanitizer let something through that only the CSP stopped); the reply's DOM has an
// element or attribute the Markdown renderer never makes (script, on*, style, iframe, object, embed,
// form, base, meta, img, svg, … or a non-https href); an expected literal text or code text is
// missing; a click on one of its links navigated instead of going to the app's open_link; or
// something covers the composer. After all payloads the composer must still send and get a reply.
// Prints one line per check and ends with "N passed, N failed" (scripts/test.sh sums it).
// Usage: node ui/tests/browser.mjs   (after `npm run build`; CHROMIUM=/path overrides /usr/bin/chromium,
// K3_PAYLOADS=3,41 runs only those payloads)
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { payloads } from "./payloads.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const ui = resolve(here, "..");
const dist = join(ui, "dist");
const started = Date.now();

/** The CSP the Tauri window gets, as one header value. */
function appCsp() {
  const conf = JSON.parse(readFileSync(resolve(ui, "../src-tauri/tauri.conf.json"), "utf8"));
  const csp = conf?.app?.security?.csp;
  if (typeof csp === "string") return csp;
  if (csp && typeof csp === "object") return Object.entries(csp).map(([k, v]) => `${k} ${Array.isArray(v) ? v.join(" ") : v}`).join("; ");
  throw new Error("src-tauri/tauri.conf.json has no app.security.csp");
}

const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".json": "application/json", ".png": "image/png", ".woff2": "font/woff2" };

/** Every request the server saw: { path, file } (file null when it is not a file of ui/dist). */
const served = [];

/** The file of ui/dist a URL path names, or null. */
function distFile(path) {
  const file = normalize(join(dist, path === "/" ? "index.html" : path.slice(1)));
  return file.startsWith(dist + sep) && existsSync(file) && statSync(file).isFile() ? file : null;
}

function serve(csp) {
  const server = createServer((req, res) => {
    const file = distFile(decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname));
    served.push({ path: req.url ?? "", file });
    if (!file) {
      res.writeHead(404, { "Content-Security-Policy": csp }).end();
      return;
    }
    res.writeHead(200, {
      "Content-Type": TYPES[extname(file)] ?? "application/octet-stream",
      "Content-Security-Policy": csp,
      "Cache-Control": "no-store",
    });
    res.end(readFileSync(file));
  });
  return new Promise((ok) => server.listen(0, "127.0.0.1", () => ok(server)));
}

// Runs in the page before the app: the mock hook, and the CSP violation log.
function initScript() {
  globalThis.__k3Mock = { replies: [], opened: [] };
  globalThis.__csp = [];
  document.addEventListener(
    "securitypolicyviolation",
    (e) => globalThis.__csp.push({ directive: e.effectiveDirective, blocked: e.blockedURI, sample: e.sample, line: e.lineNumber }),
    true,
  );
}

// Runs in the page on one rendered message: every element and attribute the app's Markdown
// renderer cannot produce, and every link that is not a plain https one opened in the system browser.
function inspect(el) {
  const TAGS = new Set("P A EM STRONG S DEL CODE PRE UL OL LI BLOCKQUOTE H1 H2 H3 H4 H5 H6 HR BR TABLE THEAD TBODY TR TH TD SPAN DIV BUTTON".split(" "));
  const ATTRS = new Set(["class", "href", "target", "rel", "title", "type", "aria-label", "start"]);
  const problems = [];
  for (const n of el.querySelectorAll("*")) {
    const tag = n.tagName.toUpperCase();
    if (!TAGS.has(tag) || n.namespaceURI !== "http://www.w3.org/1999/xhtml") problems.push(`element <${n.tagName.toLowerCase()}>`);
    if (tag === "BUTTON" && !n.classList.contains("copy-code")) problems.push("a button that is not Copy");
    for (const a of n.attributes) {
      if (!ATTRS.has(a.name)) problems.push(`attribute ${a.name}="${a.value.slice(0, 60)}" on <${n.tagName.toLowerCase()}>`);
      if (/^\s*(javascript|data|vbscript):/i.test(a.value)) problems.push(`${a.name}=${a.value.slice(0, 60)}`);
    }
    if (n.hasAttribute("href")) {
      if (tag !== "A") problems.push(`href on <${n.tagName.toLowerCase()}>`);
      const href = n.getAttribute("href");
      if (!/^https:\/\/[^\s/]/.test(href)) problems.push(`non-https href ${href.slice(0, 60)}`);
      if (n.getAttribute("target") !== "_blank") problems.push(`link without target=_blank: ${href.slice(0, 60)}`);
      if (!/\bnoopener\b/.test(n.getAttribute("rel") ?? "") || !/\bnoreferrer\b/.test(n.getAttribute("rel") ?? "")) problems.push(`link without rel=noopener noreferrer: ${href.slice(0, 60)}`);
    }
  }
  return {
    problems,
    text: el.textContent,
    code: [...el.querySelectorAll("pre code")].map((c) => c.textContent),
    links: [...el.querySelectorAll("a[href]")].map((a) => a.getAttribute("href")),
    width: el.getBoundingClientRect().width,
  };
}

// Runs in the page: whether the composer is the topmost element at its centre (no overlay),
// and whether the page grew sideways.
function layout() {
  const c = document.querySelector("#composer");
  if (!c) return { composer: false, covered: "no #composer", wide: false };
  const r = c.getBoundingClientRect();
  const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  const wide = document.documentElement.scrollWidth > window.innerWidth + 1;
  return { composer: true, covered: top === c ? null : top ? `<${top.tagName.toLowerCase()} class="${top.className}">` : "nothing", wide };
}

const HOSTILE_RESULT = "<iframe srcdoc='<script>parent.__pwned=3</script>'></iframe> **not bold** <script>window.__pwned=4</script>";

/** A saved conversation of an agent loop: a question, two calls (one with hostile arguments), a
 *  hostile result, and the answer. */
function agentConversation() {
  const base = { think: null, status: "complete", stats: null, failure: null, toolCalls: [], toolAnswer: null, createdAt: 1 };
  return {
    id: 900, title: "Weather in Bath", systemPrompt: "", backend: null, createdAt: 1, updatedAt: 1,
    settings: { temperature: 0, topP: 1, seed: 1, maxTokens: 64, thinking: true, thinkingEffort: "high" },
    messages: [
      { ...base, id: 901, role: "user", content: "What is the weather in Bath?" },
      {
        ...base, id: 902, role: "assistant", content: "",
        toolCalls: [
          { id: "call_1", tool: "weather", index: 1, arguments: JSON.stringify({ city: "Bath", html: '<img src=x onerror="window.__pwned=1">' }) },
          { id: "call_2", tool: "clock", index: 2, arguments: "{}" },
        ],
      },
      { ...base, id: 903, role: "tool", content: HOSTILE_RESULT, toolAnswer: { callId: "call_1", tool: "weather", index: 1 } },
      { ...base, id: 904, role: "assistant", content: "It rains in **Bath** today." },
    ],
  };
}

let passed = 0;
let failed = 0;
function report(name, problems) {
  if (problems.length === 0) {
    passed++;
    console.log(`ok   ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}\n       ${problems.join("\n       ")}`);
  }
}

async function main() {
  if (!existsSync(join(dist, "index.html"))) throw new Error("ui/dist/index.html is missing: run `npm run build` in ui/ first");
  const csp = appCsp();
  const server = await serve(csp);
  const origin = `http://127.0.0.1:${server.address().port}`;
  const profile = mkdtempSync(join(tmpdir(), "k3-browser-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1180, height: 780 },
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync",
      // Nothing but the test server resolves: a leak is logged, it never reaches the network.
      "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ],
  });
  try {
    const popups = [];
    context.on("page", (p) => popups.push(p.url()));
    const page = context.pages()[0] ?? (await context.newPage());
    /** Every request the page made: { url, ok } (ok: a file of ui/dist on the test server). */
    const requests = [];
    page.on("request", (r) => {
      const url = new URL(r.url());
      requests.push({ url: r.url(), ok: url.origin === origin && distFile(decodeURIComponent(url.pathname)) !== null });
    });
    const pageErrors = [];
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    await page.addInitScript(initScript);
    await page.goto(`${origin}/`, { waitUntil: "load" });
    await page.waitForSelector("#composer", { timeout: 10_000 });
    const home = page.url();

    const state = () => page.evaluate(() => ({ pwned: window.__pwned, parentPwned: window.top.__pwned, csp: globalThis.__csp.length, opened: globalThis.__k3Mock.opened.length }));
    const unexpectedRequests = () => requests.filter((r) => !r.ok).map((r) => r.url);
    const unexpectedServed = () => served.filter((s) => !s.file).map((s) => s.path);

    // Self-check: the detectors see what they are meant to (a test that cannot fail proves nothing).
    {
      const before = served.length;
      await page.evaluate((o) => {
        const img = document.createElement("img");
        img.src = `${o}/hit/self-check`;
        document.body.append(img);
        const b = document.createElement("b");
        b.setAttribute("onclick", "window.__pwned = 'self-check'");
        document.body.append(b);
        b.click();
        img.remove();
        b.remove();
      }, origin);
      await page.waitForTimeout(200);
      const s = await page.evaluate(() => ({ csp: globalThis.__csp.splice(0), pwned: window.__pwned }));
      const problems = [];
      if (!served.slice(before).some((r) => r.path === "/hit/self-check")) problems.push("a same-origin image request was not seen by the server");
      if (!s.csp.some((v) => v.directive.startsWith("script-src"))) problems.push("an inline handler did not raise a securitypolicyviolation (is the CSP header sent?)");
      if (s.pwned !== undefined) problems.push("the CSP let an inline handler run");
      report("self-check: server log and CSP violation log work, inline handlers are blocked", problems);
      served.splice(before);
      requests.length = 0;
    }

    // The memory planner (public/k3_plan.wasm, ui/src/plan/wasmPlanner.ts) loads under the
    // app's CSP: fetched from the page's origin (connect-src) and compiled ('wasm-unsafe-eval').
    {
      const out = await page.evaluate(async () => {
        try {
          const response = await fetch(new URL("k3_plan.wasm", document.baseURI));
          const { instance } = await WebAssembly.instantiate(await response.arrayBuffer(), {});
          return { exports: Object.keys(instance.exports).sort().join(" "), csp: globalThis.__csp.splice(0) };
        } catch (e) {
          return { error: String(e), csp: globalThis.__csp.splice(0) };
        }
      });
      const problems = [];
      if (out.error) problems.push(`the planner did not load: ${out.error}`);
      else if (!/\bk3_plan\b/.test(out.exports)) problems.push(`the planner exports ${out.exports}`);
      problems.push(...out.csp.map((v) => `CSP violation: ${v.directive} ${v.blocked}`));
      report("the planner's wasm module is fetched and compiled under the app's CSP", problems);
    }

    // K3_PAYLOADS=3,41 runs only those (1-based) payloads, for debugging one.
    const only = (process.env.K3_PAYLOADS ?? "").split(",").filter(Boolean).map(Number);
    const all = payloads(origin).map((p, i) => ({ ...p, n: i + 1 }));
    const list = all.filter((p) => only.length === 0 || only.includes(p.n));
    let replies = 0;
    for (const p of list) {
      const name = `payload ${String(p.n).padStart(2)} [${p.category}] ${p.name}`;
      const servedBefore = served.length;
      const requestsBefore = requests.length;
      const s0 = await state();
      await page.evaluate((md) => globalThis.__k3Mock.replies.push(md), p.md);
      const userText = p.user === false ? `payload ${p.n}` : p.md;
      await page.fill("#composer", userText);
      await page.click('button[aria-label="Send"]');
      replies++;
      try {
        await page.waitForFunction(
          (n) => document.querySelectorAll(".message[data-role=assistant][data-id][data-status=complete]").length === n && !document.querySelector(".message[data-status=streaming]"),
          replies,
          { timeout: 15_000 },
        );
      } catch {
        // The window is stuck on this reply: the rest cannot be judged.
        report(name, ["the reply was not rendered within 15 s (the window froze?)"]);
        failed += list.length - list.indexOf(p) - 1;
        console.log(`FAIL the ${list.length - list.indexOf(p) - 1} payloads after it were not run`);
        break;
      }
      const reply = page.locator(".message[data-role=assistant][data-id]").last();
      const user = page.locator(".message[data-role=user][data-id]").last();
      const r = await reply.locator(".content").evaluate(inspect);
      const u = await user.locator(".content").evaluate(inspect);
      // Click every anchor of the reply as a user would (activation behaviour included).
      await reply.locator(".content").evaluate((el) => el.querySelectorAll("a").forEach((a) => a.click()));
      await page.waitForTimeout(30);
      const s1 = await state();
      const problems = [...r.problems, ...u.problems.map((x) => `user message: ${x}`)];
      if (u.text !== userText) problems.push("the user message is not shown as its literal text");
      for (const t of p.text ?? []) if (!r.text.includes(t)) problems.push(`literal text missing: ${t.slice(0, 80)}`);
      if (p.code) {
        if (r.code.length !== p.code.length) problems.push(`${r.code.length} code blocks, expected ${p.code.length}`);
        p.code.forEach((c, k) => r.code[k] !== c && problems.push(`code block ${k + 1} is ${JSON.stringify((r.code[k] ?? "").slice(0, 80))}, expected ${JSON.stringify(c.slice(0, 80))}`));
      }
      const want = p.links ?? [];
      if (JSON.stringify(r.links) !== JSON.stringify(want)) problems.push(`links ${JSON.stringify(r.links.map((l) => l.slice(0, 80)))}, expected ${JSON.stringify(want.map((l) => l.slice(0, 80)))}`);
      const opened = await page.evaluate((n) => globalThis.__k3Mock.opened.slice(n), s0.opened);
      if (JSON.stringify(opened) !== JSON.stringify(r.links)) problems.push(`clicking the links opened ${JSON.stringify(opened.map((l) => l.slice(0, 80)))} through the app`);
      if (s1.pwned !== undefined || s1.parentPwned !== undefined) problems.push(`EXECUTED: window.__pwned = ${String(s1.pwned ?? s1.parentPwned)}`);
      if (s1.csp > s0.csp) {
        const v = await page.evaluate((n) => globalThis.__csp.slice(n), s0.csp);
        problems.push(...v.map((x) => `CSP violation (only the CSP stopped it): ${x.directive} ${x.blocked} ${x.sample ?? ""}`));
      }
      for (const s of served.slice(servedBefore)) if (!s.file) problems.push(`request reached the server: ${s.path.slice(0, 80)}`);
      for (const q of requests.slice(requestsBefore)) if (!q.ok) problems.push(`the page requested ${q.url.slice(0, 80)}`);
      if (page.url() !== home) problems.push(`the window navigated to ${page.url().slice(0, 80)}`);
      const l = await page.evaluate(layout);
      if (l.covered) problems.push(`the composer is covered by ${l.covered}`);
      if (p.layout && l.wide) problems.push("the reply makes the page scroll sideways");
      report(name, problems);
    }

    // A real mouse click, and a middle click (which opens a new window unless handled), on a link.
    {
      const o0 = (await state()).opened;
      await page.evaluate((md) => globalThis.__k3Mock.replies.push(md), "[docs](https://example.com/docs) and [more](https://example.com/more)");
      await page.fill("#composer", "links please");
      await page.click('button[aria-label="Send"]');
      replies++;
      await page.waitForFunction((n) => document.querySelectorAll(".message[data-role=assistant][data-id][data-status=complete]").length === n, replies, { timeout: 15_000 });
      const links = page.locator(".message[data-role=assistant][data-id]").last().locator("a[href]");
      const requestsBefore = requests.length;
      await links.nth(0).click();
      await links.nth(1).click({ button: "middle" });
      await links.nth(1).click({ modifiers: ["Shift"] });
      await links.nth(1).click({ modifiers: ["ControlOrMeta"] });
      await page.waitForTimeout(300);
      const opened = await page.evaluate((n) => globalThis.__k3Mock.opened.slice(n), o0);
      const problems = [];
      const want = ["https://example.com/docs", "https://example.com/more", "https://example.com/more", "https://example.com/more"];
      if (JSON.stringify(opened) !== JSON.stringify(want)) problems.push(`open_link got ${JSON.stringify(opened)}, expected ${JSON.stringify(want)}`);
      if (popups.length) problems.push(`new windows opened: ${popups.join(", ")}`);
      if (page.url() !== home) problems.push(`the window navigated to ${page.url()}`);
      for (const q of requests.slice(requestsBefore)) if (!q.ok) problems.push(`the page requested ${q.url}`);
      report("links: click, middle click, shift and ctrl click all go through open_link, none navigates or opens a window", problems);
    }

    // The page is still usable: the composer sends and the demo reply arrives.
    {
      const problems = [];
      await page.fill("#composer", "are you still there?");
      await page.keyboard.press("Enter");
      replies++;
      try {
        await page.waitForFunction((n) => document.querySelectorAll(".message[data-role=assistant][data-id][data-status=complete]").length === n, replies, { timeout: 15_000 });
      } catch {
        problems.push("no reply after Enter in the composer");
      }
      const text = await page.locator(".message[data-role=assistant][data-id]").last().innerText();
      if (!/expert/.test(text)) problems.push("the last reply is not the demo model's");
      const l = await page.evaluate(layout);
      if (!l.composer || l.covered) problems.push(`composer: ${l.covered}`);
      const title = await page.locator("[data-testid=conversation-list] li .conv-title").first().evaluate(inspect);
      problems.push(...title.problems.map((x) => `conversation title: ${x}`));
      if (pageErrors.length) problems.push(...pageErrors.map((e) => `page error: ${e}`));
      report("the app still works after every payload (composer sends, demo reply, no page errors)", problems);
    }

    // Agent conversations (issue 39): an assistant's tool calls and a tool's result are collapsed
    // blocks of text; hostile arguments and results stay text (no element, no request, nothing runs).
    {
      const problems = [];
      const agent = await context.newPage();
      agent.on("pageerror", (e) => problems.push(`page error: ${e}`));
      await agent.addInitScript(initScript);
      await agent.addInitScript((conversation) => {
        globalThis.__k3Mock.conversations = [conversation];
      }, agentConversation());
      await agent.goto(`${origin}/`, { waitUntil: "load" });
      await agent.waitForSelector("#composer", { timeout: 10_000 });
      await agent.locator("[data-testid=conversation-list] li", { hasText: "Weather in Bath" }).first().click();
      await agent.waitForSelector("details.tool-call", { timeout: 10_000 });
      const blocks = await agent.evaluate(() => {
        const out = [];
        for (const d of document.querySelectorAll("details.tool-call, details.tool-result")) {
          d.open = true;
          const bad = [];
          for (const n of d.querySelectorAll("*")) {
            if (!["SUMMARY", "CODE", "SPAN", "DIV"].includes(n.tagName)) bad.push(`<${n.tagName.toLowerCase()}>`);
            for (const a of n.attributes) if (a.name !== "class") bad.push(`${a.name} on <${n.tagName.toLowerCase()}>`);
          }
          out.push({ kind: d.className, tool: d.getAttribute("data-tool"), summary: d.querySelector("summary").textContent, text: d.querySelector(".tool-text").textContent, bad });
        }
        return out;
      });
      if (blocks.length !== 3) problems.push(`${blocks.length} tool blocks instead of 3`);
      for (const b of blocks) problems.push(...b.bad.map((x) => `${b.kind}: ${x}`));
      const [call, clock, result] = blocks;
      if (call?.summary !== "Calls weather · call 1") problems.push(`call summary: ${call?.summary}`);
      if (!call?.text.includes('"html": "<img src=x onerror=\\"window.__pwned=1\\">"')) problems.push(`call arguments: ${call?.text}`);
      if (clock?.text !== "{}") problems.push(`second call: ${clock?.text}`);
      if (result?.text !== HOSTILE_RESULT) problems.push(`result text: ${result?.text}`);
      await agent.waitForTimeout(300);
      const pwned = await agent.evaluate(() => ({ pwned: window.__pwned, csp: globalThis.__csp.length }));
      if (pwned.pwned !== undefined) problems.push(`window.__pwned = ${pwned.pwned}`);
      if (pwned.csp) problems.push(`${pwned.csp} CSP violations`);
      const shots = resolve(ui, "../target/e2e-screenshots");
      mkdirSync(shots, { recursive: true });
      await agent.screenshot({ path: join(shots, "agent-conversation.png"), fullPage: true });
      await agent.close();
      report("agent conversation: tool calls and results are collapsed blocks of text, hostile ones included", problems);
    }

    // Summary of the whole run's logs.
    {
      const problems = [];
      for (const u of unexpectedServed()) problems.push(`served: ${u.slice(0, 100)}`);
      for (const u of unexpectedRequests()) problems.push(`requested: ${u.slice(0, 100)}`);
      const late = await page.evaluate(() => globalThis.__csp);
      for (const v of late) problems.push(`CSP: ${v.directive} ${v.blocked}`);
      report(`run logs: ${served.length} requests served, all files of ui/dist; ${late.length} CSP violations`, problems);
    }
    console.log(`${list.length} payloads in ${new Set(list.map((p) => p.category)).size} categories; CSP sent: ${csp}`);
    console.log(`browser test wall time: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    await context.close().catch(() => undefined);
    server.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

main()
  .catch((e) => {
    failed++;
    console.log(`FAIL harness: ${e?.stack ?? e}`);
  })
  .finally(() => {
    console.log(`${passed} passed, ${failed} failed`);
    process.exitCode = failed ? 1 : 0;
  });
