// The hostile Markdown corpus for ui/tests/browser.mjs: model replies that try to run script, fetch
// from the page's origin, navigate, or restyle the window (issue 13 item 4, RELIABILITY UI-04..06).
// Owns: each payload's text and what must be seen of it once rendered.
// Every payload that executes sets `window.__pwned` (or its parent's) or requests `${origin}/hit/N`
// from the test server; the harness treats either as a failure, as well as any CSP violation.
//
// Fields: name, category, md (the reply), and optionally
//   text   strings the rendered reply must show literally (raw HTML is escaped, not dropped)
//   code   the exact textContent of each `pre code` in order (code blocks show HTML as text)
//   links  the exact hrefs of the links that may remain (https only); default: none
//   user   false to type a short label instead of the payload as the user's message (huge payloads)
//   layout true to also check that the reply does not widen the page

/** @param {string} origin the test server, e.g. http://127.0.0.1:PORT */
export function payloads(origin) {
  const hit = (n) => `${origin}/hit/${n}`;
  const pw = (n) => `window.__pwned=${n}`;
  const b64 = (s) => Buffer.from(s).toString("base64");
  const svgDoc = (n) => `<svg xmlns="http://www.w3.org/2000/svg" onload="top.__pwned=${n}"><script>top.__pwned=${n}</script></svg>`;
  const list = [
    // --- script elements ---
    { category: "script", name: "inline <script>", md: `Hi <script>${pw(1)}</script> there`, text: [`<script>${pw(1)}</script>`] },
    { category: "script", name: "<script src> to the origin", md: `<script src="${hit(2)}"></script>`, text: [`<script src="${hit(2)}">`] },
    { category: "script", name: "<script> as its own HTML block", md: `<script>\n${pw(3)}\n</script>\n\nafter`, text: ["<script>", pw(3)] },
    // --- event-handler attributes ---
    { category: "handler", name: "<img src=x onerror>", md: `<img src=x onerror="${pw(4)}">`, text: [`<img src=x onerror="${pw(4)}">`] },
    { category: "handler", name: "<img> from the origin", md: `<img src="${hit(5)}">`, text: [`<img src="${hit(5)}">`] },
    { category: "handler", name: "<body onload> / <input autofocus onfocus>", md: `<body onload="${pw(6)}"><input autofocus onfocus="${pw(6)}">`, text: [`<input autofocus onfocus="${pw(6)}">`] },
    { category: "handler", name: "<details open ontoggle>", md: `<details open ontoggle="${pw(7)}"><summary>x</summary>y</details>`, text: [`<details open ontoggle="${pw(7)}">`] },
    { category: "handler", name: "<a ping> beside an https link", md: `<a href="https://example.com/" ping="${hit(8)}">x</a>`, text: [`ping="${hit(8)}"`], links: ["https://example.com/"] }, // the escaped URL is linkified
    // --- SVG / MathML / mXSS ---
    { category: "svg", name: "<svg onload>", md: `<svg onload="${pw(9)}"><circle r="9"/></svg>`, text: [`<svg onload="${pw(9)}">`] },
    { category: "svg", name: "<svg><script> and <use href=data:>", md: `<svg><script>${pw(10)}</script><use href="data:image/svg+xml;base64,${b64(svgDoc(10))}#x"/></svg>` },
    { category: "svg", name: "<svg><animate onbegin>", md: `<svg><animate onbegin="${pw(11)}" attributeName="x" dur="1s"/></svg>`, text: ["<animate onbegin="] },
    { category: "mxss", name: "<math> namespace confusion", md: `<math><mtext><table><mglyph><style><img src=x onerror="${pw(12)}">` },
    { category: "mxss", name: "<noscript> title breakout", md: `<noscript><p title="</noscript><img src=x onerror=${pw(13)}>">` },
    { category: "mxss", name: "<svg></p><style> breakout", md: `<svg></p><style><a id="</style><img src=1 onerror=${pw(14)}>">` },
    { category: "mxss", name: "<template>/<xmp>/<plaintext>", md: `<template><img src=x onerror=${pw(15)}></template><xmp><img src=x onerror=${pw(15)}></xmp><plaintext>` },
    // --- frames and plugins ---
    { category: "frame", name: "<iframe src> to the origin", md: `<iframe src="${hit(16)}"></iframe>`, text: [`<iframe src="${hit(16)}">`] },
    { category: "frame", name: "<iframe srcdoc>", md: `<iframe srcdoc="<script>parent.__pwned=17</script>"></iframe>` },
    { category: "frame", name: "<object data>", md: `<object data="${hit(18)}"></object>`, text: [`<object data="${hit(18)}">`] },
    { category: "frame", name: "<embed src>", md: `<embed src="${hit(19)}">`, text: [`<embed src="${hit(19)}">`] },
    { category: "frame", name: "<audio>/<video poster>/<link rel=prefetch>", md: `<audio src="${hit(20)}" autoplay></audio><video poster="${hit(20)}"></video><link rel="prefetch" href="${hit(20)}">` },
    // --- link schemes ---
    { category: "link", name: "[x](javascript:)", md: `[click me](javascript:${pw(21)})`, text: [`[click me](javascript:${pw(21)})`] },
    { category: "link", name: "[x](JaVaScRiPt:)", md: `[click me](JaVaScRiPt:${pw(22)})` },
    { category: "link", name: "entity-encoded javascript&#58;", md: `[a](javascript&#58;${pw(23)}) [b](&#x6A;avascript:${pw(23)}) [c](java&#x09;script:${pw(23)})` },
    { category: "link", name: "javascript: with control characters and spaces", md: `[a](<java script:${pw(24)}>) [b](\u0001javascript:${pw(24)}) [c](<\u0000javascript:${pw(24)}>)` },
    { category: "link", name: "[x](data:text/html)", md: `[open](data:text/html;base64,${b64(`<script>opener.__pwned=25</script>`)}) [b](data:text/html,hi)` },
    { category: "link", name: "![x](data:image/svg+xml) image", md: `![img](data:image/svg+xml;base64,${b64(svgDoc(26))}) ![img2](${hit(26)}) ![remote](https://example.com/p.png)`, links: ["https://example.com/p.png"] }, // images are off: a link, never an <img>
    { category: "link", name: "raw <a href=javascript:>", md: `<a href="javascript:${pw(27)}">x</a>`, text: [`<a href="javascript:${pw(27)}">x</a>`] },
    { category: "link", name: "autolinks <javascript:> <data:> <vbscript:>", md: `<javascript:${pw(28)}> <data:text/html,hi> <vbscript:msgbox(1)>`, text: [`<javascript:${pw(28)}>`] },
    { category: "link", name: "reference-style links to javascript:/data:", md: `[x][a] and [y][b] and [z]\n\n[a]: javascript:${pw(29)}\n[b]: <data:text/html,hi> "t"\n[z]: JAVASCRIPT:${pw(29)}\n` },
    { category: "link", name: "http:, file:, protocol-relative and relative links", md: `[a](http://example.com) [b](file:///etc/passwd) [c](//evil.example/x) [d](/hit/30) [e](${hit(30)}) [f](#top) [g](mailto:a@b.c) www.example.com a@b.c` },
    { category: "link", name: "https link: title and quote injection", md: `[t](https://example.com/a "x\\" onmouseover=\\"${pw(31)}") [q](https://example.com/"onmouseover="${pw(31)})`, links: ["https://example.com/a", "https://example.com/%22onmouseover=%22window.__pwned=31"] },
    { category: "link", name: "linkified URL carrying HTML", md: `see https://example.com/<img src=x onerror=${pw(32)}> now`, links: ["https://example.com/"] },
    { category: "link", name: "https: without a host / https:javascript:", md: `[a](https:javascript:${pw(33)}) [b](https:/evil.example) [c](https:\\\\evil.example)` },
    // --- CSS tricks ---
    { category: "css", name: "<style> with url() exfiltration", md: `<style>body{background:url(${hit(34)})} .composer{display:none}</style>`, text: ["<style>body{background:url("] },
    { category: "css", name: "style= fixed overlay", md: `<div style="position:fixed;inset:0;z-index:99999;background:red;opacity:.99">OVERLAY</div>`, text: ["position:fixed"] },
    { category: "css", name: "<link rel=stylesheet> to the origin", md: `<link rel="stylesheet" href="${hit(36)}">` },
    { category: "css", name: "table alignment (markdown-it writes style=)", md: "| left | centre | right |\n|:--|:-:|--:|\n| 1 | 2 | 3 |\n", text: ["centre"] },
    // --- documents: forms, meta, base ---
    { category: "document", name: "<form action> with a button", md: `<form action="${hit(38)}"><button formaction="${hit(38)}">go</button></form>`, text: [`<form action="${hit(38)}">`] },
    { category: "document", name: "<meta http-equiv=refresh>", md: `<meta http-equiv="refresh" content="0;url=${hit(39)}">`, text: ["<meta http-equiv="] },
    { category: "document", name: "<base href>", md: `<base href="${hit(40)}/">\n\n[rel](x)`, text: [`<base href="${hit(40)}/">`] },
    // --- code blocks: HTML must be text, hostile language names ---
    { category: "code", name: "HTML in a fenced html block", md: "```html\n<script>" + pw(41) + "</script><img src=x onerror=" + pw(41) + ">\n```\n", code: ["<script>" + pw(41) + "</script><img src=x onerror=" + pw(41) + ">\n"] },
    { category: "code", name: "HTML in an indented block and inline code", md: "    <iframe src=\"" + hit(42) + "\"></iframe>\n\nand `<img src=x onerror=" + pw(42) + ">`", code: ["<iframe src=\"" + hit(42) + "\"></iframe>\n"], text: ["<img src=x onerror=" + pw(42) + ">"] },
    { category: "code", name: "```\"><img onerror> language", md: "```\"><img src=x onerror=" + pw(43) + ">\nx\n```\n", code: ["x\n"] },
    { category: "code", name: "```js\" onmouseover= language", md: "```js\" onmouseover=\"" + pw(44) + "\nlet a = '</code></pre><img src=x onerror=" + pw(44) + ">';\n```\n", code: ["let a = '</code></pre><img src=x onerror=" + pw(44) + ">';\n"] },
    { category: "code", name: "languages named after Object.prototype", md: ["constructor", "__proto__", "toString", "hasOwnProperty"].map((l) => "```" + l + "\n<b>" + l + "</b>\n```\n").join("\n"), code: ["<b>constructor</b>\n", "<b>__proto__</b>\n", "<b>toString</b>\n", "<b>hasOwnProperty</b>\n"] },
    { category: "code", name: "unterminated fence with HTML", md: "```xml\n<svg onload=" + pw(46) + ">\n</code></pre><script>" + pw(46) + "</script>", code: ["<svg onload=" + pw(46) + ">\n</code></pre><script>" + pw(46) + "</script>"] },
    // --- malformed and nested markup ---
    { category: "malformed", name: "nested and split tags", md: `<scr<script>ipt>${pw(47)}</scr</script>ipt> <<img src=x onerror=${pw(47)}>img>`, text: ["<scr<script>ipt>"] },
    { category: "malformed", name: "unterminated tags and attributes", md: `<img src=x onerror="${pw(48)}\n\n<a href="javascript:${pw(48)}\n\n<div style="position:fixed` },
    { category: "malformed", name: "HTML entities stay text", md: `&lt;script&gt;${pw(49)}&lt;/script&gt; &#60;img src=x onerror=${pw(49)}&#62;`, text: [`<script>${pw(49)}</script>`, `<img src=x onerror=${pw(49)}>`] },
    { category: "malformed", name: "deep nesting (blockquotes, lists, brackets)", md: ">".repeat(3000) + " deep\n\n" + "- ".repeat(500) + "x\n\n" + "[".repeat(3000) + "](javascript:" + pw(50) + ")", user: false },
    // --- unicode tricks ---
    { category: "unicode", name: "RTL override and bidi isolates in link text", md: `[\u202Egnp.exe](https://example.com/a) [\u2066safe\u2069](https://example.com/b) \u202Ejavascript:${pw(51)}`, links: ["https://example.com/a", "https://example.com/b"] },
    { category: "unicode", name: "IDN homograph host and a spoofed https link text", md: `[https://good.example](https://evil.example/) https://exаmple.com/x`, links: ["https://evil.example/", "https://xn--exmple-4nf.com/x"] },
    { category: "unicode", name: "zero-width and fullwidth characters in the scheme", md: `[a](java\u200Bscript:${pw(53)}) [b](ｊａｖａｓｃｒｉｐｔ:${pw(53)}) [c](\uFEFFjavascript:${pw(53)})` },
    // --- size ---
    { category: "size", name: "one 100 000-character line", md: "A".repeat(100_000) + " https://example.com/end", links: ["https://example.com/end"], user: false, layout: true },
    { category: "size", name: "a 9 000-character URL and a 30 000-character code line", md: "https://example.com/" + "a".repeat(9_000) + "\n\n```\n" + "<b>".repeat(10_000) + "\n```\n", links: ["https://example.com/" + "a".repeat(9_000)], code: ["<b>".repeat(10_000) + "\n"], user: false, layout: true },
  ];
  return list;
}
