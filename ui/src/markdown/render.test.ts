// Markdown rendering: untrusted model output must never inject HTML, scripts or non-https links.
import { describe, expect, it } from "vitest";
import { isAllowedLink, renderMarkdown } from "./render";

function dom(html: string): HTMLElement {
  const div = document.createElement("div");
  div.innerHTML = html;
  return div;
}

describe("renderMarkdown", () => {
  it("escapes raw HTML instead of passing it through", () => {
    const html = renderMarkdown('Hello <script>alert(1)</script> <img src=x onerror="alert(2)"> <b>bold</b>');
    const el = dom(html);
    expect(el.querySelector("script")).toBeNull();
    expect(el.querySelector("img")).toBeNull();
    expect(el.querySelector("b")).toBeNull();
    expect(el.textContent).toContain("<script>alert(1)</script>");
    expect(el.textContent).toContain("<b>bold</b>");
    expect(html).not.toMatch(/<script/i);
    expect(html).toContain("&lt;script&gt;");
  });

  it("drops javascript:, data: and http: links", () => {
    const el = dom(
      renderMarkdown("[a](javascript:alert(1)) [b](data:text/html,hi) [c](http://example.com) <javascript:alert(1)>"),
    );
    expect(el.querySelectorAll("a")).toHaveLength(0);
    expect(el.innerHTML).not.toMatch(/href=/);
    expect(el.textContent).toContain("[a](javascript:alert(1))");
  });

  it("keeps https links, opened outside with rel=noopener noreferrer", () => {
    const el = dom(renderMarkdown("See [the docs](https://example.com/a?b=1) and https://moonshot.ai/x"));
    const links = [...el.querySelectorAll("a")];
    expect(links.map((a) => a.getAttribute("href"))).toEqual(["https://example.com/a?b=1", "https://moonshot.ai/x"]);
    for (const a of links) {
      expect(a.getAttribute("rel")).toBe("noopener noreferrer");
      expect(a.getAttribute("target")).toBe("_blank");
    }
    expect(links[0]!.textContent).toBe("the docs");
  });

  it("does not render images (no remote fetches from model output)", () => {
    const el = dom(renderMarkdown("![pixel](https://tracker.example/p.png)"));
    expect(el.querySelector("img")).toBeNull();
  });

  it("highlights fenced code in a registered language and adds a Copy button", () => {
    const el = dom(renderMarkdown("```rust\nfn main() { let x = 1; }\n```\n"));
    const code = el.querySelector("pre code");
    expect(code).not.toBeNull();
    expect(code!.className).toContain("language-rust");
    expect(code!.querySelector(".hljs-keyword")?.textContent).toBe("fn");
    expect(code!.textContent).toBe("fn main() { let x = 1; }\n");
    const button = el.querySelector("button.copy-code");
    expect(button?.getAttribute("aria-label")).toBe("Copy code");
    expect(el.querySelector(".code-lang")?.textContent).toBe("rust");
  });

  it("escapes code in an unknown language without highlighting", () => {
    const el = dom(renderMarkdown("```klingon\n<b>qapla</b>\n```\n"));
    const code = el.querySelector("pre code")!;
    expect(code.querySelector("b")).toBeNull();
    expect(code.querySelector("span")).toBeNull();
    expect(code.textContent).toBe("<b>qapla</b>\n");
  });

  it("cannot smuggle attributes through the fence info string", () => {
    const el = dom(renderMarkdown('```js" onmouseover="alert(1)\nx\n```\n'));
    expect(el.innerHTML).not.toMatch(/onmouseover=/);
  });

  it("table alignment becomes classes, never a style attribute (the CSP refuses inline styles)", () => {
    const html = renderMarkdown("| l | c | r | n |\n|:--|:-:|--:|---|\n| 1 | 2 | 3 | 4 |\n");
    expect(html).not.toMatch(/style=/i);
    const el = dom(html);
    const cls = (sel: string) => [...el.querySelectorAll(sel)].map((c) => c.getAttribute("class"));
    expect(cls("th")).toEqual(["align-left", "align-center", "align-right", null]);
    expect(cls("td")).toEqual(["align-left", "align-center", "align-right", null]);
  });

  it("renders tables and emphasis", () => {
    const el = dom(renderMarkdown("| a | b |\n|---|---|\n| 1 | **2** |\n"));
    expect(el.querySelector("table td strong")?.textContent).toBe("2");
  });
});

describe("isAllowedLink", () => {
  it("accepts only https URLs", () => {
    expect(isAllowedLink("https://example.com")).toBe(true);
    expect(isAllowedLink(" HTTPS://EXAMPLE.COM ")).toBe(true);
    expect(isAllowedLink("http://example.com")).toBe(false);
    expect(isAllowedLink("javascript:alert(1)")).toBe(false);
    expect(isAllowedLink("/relative")).toBe(false);
    expect(isAllowedLink("#anchor")).toBe(false);
  });
});
