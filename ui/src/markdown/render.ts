// Markdown → safe HTML for assistant messages. Model output is untrusted.
// Owns: the markdown-it setup (raw HTML off, images off, https: links only, opened outside with
// rel="noopener noreferrer"), fenced code with highlighting and a Copy button, table alignment as
// classes (never a style attribute), and DOMPurify as the second guard over the final HTML.
// Must not: let any HTML from the model through, or any link scheme but https:.
// Easy to break: DOMPurify drops `target` unless allowed, and its hooks are per instance (ours is
// private so nothing else in the page changes its behaviour).
import DOMPurify from "dompurify";
import MarkdownIt, { type RendererRule } from "markdown-it";
import { highlight } from "./highlight";

type RenderRule = RendererRule;

/** Only absolute https URLs may become links. */
export function isAllowedLink(url: string): boolean {
  return /^https:\/\/[^\s]/i.test(url.trim());
}

const md = new MarkdownIt("default", { html: false, linkify: true, typographer: false, breaks: false });
md.disable("image");
md.validateLink = isAllowedLink;

// Table column alignment: markdown-it writes `style="text-align:…"` on th/td, which the CSP
// (style-src 'self') refuses with a securitypolicyviolation (found by ui/tests/browser.mjs) and
// DOMPurify then drops, losing the alignment. A class carries it instead (markdown.css).
md.core.ruler.push("align_class", (state) => {
  for (const t of state.tokens) {
    if (t.type !== "th_open" && t.type !== "td_open") continue;
    const style = t.attrGet("style");
    if (style === null) continue;
    t.attrs = (t.attrs ?? []).filter(([name]) => name !== "style");
    const align = /^text-align:(left|center|right)$/.exec(String(style))?.[1];
    if (align) t.attrJoin("class", `align-${align}`);
  }
});

const esc = md.utils.escapeHtml;

function codeBlock(content: string, lang: string): string {
  const body = highlight(content, lang) ?? esc(content);
  const label = lang ? `<span class="code-lang">${esc(lang)}</span>` : "";
  const cls = lang ? `hljs language-${esc(lang.replace(/[^\w+-]/g, ""))}` : "hljs";
  return (
    `<div class="code-block"><div class="code-head">${label}` +
    `<button type="button" class="copy-code" aria-label="Copy code">Copy</button></div>` +
    `<pre><code class="${cls}">${body}</code></pre></div>\n`
  );
}

const fence: RenderRule = (tokens, idx) => {
  const t = tokens[idx]!;
  const info = t.info ? md.utils.unescapeAll(t.info).trim() : "";
  return codeBlock(t.content, info.split(/\s+/)[0] ?? "");
};
md.renderer.rules.fence = fence;
md.renderer.rules.code_block = (tokens, idx) => codeBlock(tokens[idx]!.content, "");

const defaultLinkOpen: RenderRule =
  md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  const t = tokens[idx]!;
  t.attrSet("target", "_blank");
  t.attrSet("rel", "noopener noreferrer");
  return defaultLinkOpen(tokens, idx, options, env, self);
};

let purifier: ReturnType<typeof DOMPurify> | null = null;

function getPurifier(): ReturnType<typeof DOMPurify> {
  if (purifier) return purifier;
  const p = DOMPurify(window);
  p.addHook("afterSanitizeAttributes", (node) => {
    if (node.nodeName !== "A") return;
    const href = node.getAttribute("href");
    if (href === null || !isAllowedLink(href)) {
      node.removeAttribute("href");
      node.removeAttribute("target");
      return;
    }
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  });
  return (purifier = p);
}

/** Markdown source → sanitized HTML string. */
export function renderMarkdown(src: string): string {
  const html = md.render(src);
  return getPurifier().sanitize(html, {
    ADD_ATTR: ["target"],
    FORBID_TAGS: ["style", "img", "form", "input", "iframe", "svg", "math"],
    FORBID_ATTR: ["style"],
  });
}
