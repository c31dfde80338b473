// Verdict messages with `backticked` names (CodeSpans.tsx): the names become code, the rest stays
// text, an unpaired backtick is kept, and markup in a message is never markup.
import { render } from "preact";
import { afterEach, describe, expect, it } from "vitest";
import { CodeSpans, codeSpans } from "./CodeSpans";

let root: HTMLElement | null = null;
afterEach(() => {
  root?.remove();
  root = null;
});

describe("codeSpans", () => {
  it("sets paired backticks as code and keeps the rest as text", () => {
    expect(codeSpans("24.50 GB available: `laptop` holds 4.32 GB")).toEqual([
      { code: false, text: "24.50 GB available: " },
      { code: true, text: "laptop" },
      { code: false, text: " holds 4.32 GB" },
    ]);
    expect(codeSpans("`k3 bench disk`")).toEqual([{ code: true, text: "k3 bench disk" }]);
    expect(codeSpans("no names")).toEqual([{ code: false, text: "no names" }]);
  });

  it("keeps an unpaired backtick as a backtick", () => {
    expect(codeSpans("a `b` c ` d")).toEqual([
      { code: false, text: "a " },
      { code: true, text: "b" },
      { code: false, text: " c ` d" },
    ]);
    expect(codeSpans("it`s")).toEqual([{ code: false, text: "it`s" }]);
  });
});

describe("CodeSpans", () => {
  it("renders code elements with the text, and markup as text", () => {
    root = document.createElement("p");
    document.body.appendChild(root);
    render(<CodeSpans text={"run `k3 doctor` <b>now</b>"} />, root);
    expect(root.textContent).toBe("run k3 doctor <b>now</b>");
    expect([...root.querySelectorAll("code")].map((c) => c.textContent)).toEqual(["k3 doctor"]);
    expect(root.querySelector("b")).toBeNull();
  });
});
