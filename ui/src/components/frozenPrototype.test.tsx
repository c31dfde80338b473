// Tauri runs the window with `freezePrototype: true` (Object.prototype frozen). Libraries that assign
// inherited names such as `constructor` onto plain objects then throw (Preact 10 did, on every
// re-render). This renders, re-renders and sanitizes Markdown with the prototype frozen.
import { render } from "preact";
import { useState } from "preact/hooks";
import { act } from "preact/test-utils";
import { beforeAll, describe, expect, it } from "vitest";
import { renderMarkdown } from "../markdown/render";
import { message, stats } from "../test/fixtures";
import { MessageView } from "./MessageView";

beforeAll(() => {
  Object.freeze(Object.prototype);
});

function Counter() {
  const [n, setN] = useState(0);
  return (
    <button type="button" aria-label="Count" onClick={() => setN(n + 1)}>
      {n}
    </button>
  );
}

describe("with Object.prototype frozen", () => {
  it("Preact renders and re-renders a stateful component", () => {
    expect(Object.isFrozen(Object.prototype)).toBe(true);
    const root = document.createElement("div");
    act(() => render(<Counter />, root));
    const button = root.querySelector("button")!;
    act(() => button.click());
    act(() => button.click());
    expect(button.textContent).toBe("2");
  });

  it("markdown-it, highlight.js and DOMPurify still work", () => {
    const html = renderMarkdown("**a** [x](https://example.com) <b>raw</b>\n\n```rust\nfn f() {}\n```\n");
    expect(html).toContain("<strong>a</strong>");
    expect(html).toContain('rel="noopener noreferrer"');
    expect(html).toContain("&lt;b&gt;raw&lt;/b&gt;");
    expect(html).toContain('<span class="hljs-keyword">fn</span>');
  });

  it("a message with stats renders", () => {
    const root = document.createElement("div");
    const noop = () => undefined;
    act(() =>
      render(
        <MessageView
          message={message({ id: 1, role: "assistant", content: "# Title", stats: stats() })}
          saved
          canRegenerate
          canEdit={false}
          editing={false}
          actions={{ onRegenerate: noop, onEdit: noop, onSaveEdit: noop, onCancelEdit: noop }}
        />,
        root,
      ),
    );
    expect(root.querySelector(".content h1")?.textContent).toBe("Title");
    expect(root.querySelector(".stats [data-stat=spt]")?.textContent).toBe("5.6 s/token");
  });
});
