// Long plain text in short spans (PlainText.tsx): the text survives exactly, no character is split,
// earlier spans stay put while a reply grows, and the streaming and saved views use it.
import { type ComponentChild, render } from "preact";
import { act } from "preact/test-utils";
import { afterEach, describe, expect, it } from "vitest";
import { newStream } from "../state/stream";
import { CHUNK, PlainText, textChunks } from "./PlainText";
import { StreamingMessage } from "./StreamingMessage";

let root: HTMLElement | null = null;
afterEach(() => {
  const mounted = root;
  if (mounted) act(() => render(null, mounted));
  root?.remove();
  root = null;
});
function mount(vnode: ComponentChild): HTMLElement {
  root = document.createElement("div");
  document.body.appendChild(root);
  act(() => render(vnode, root!));
  return root;
}

describe("textChunks", () => {
  it("keeps short text whole and cuts a 100 000-character run into pieces that join to it", () => {
    expect(textChunks("")).toEqual([""]);
    expect(textChunks("short")).toEqual(["short"]);
    const run = "A".repeat(100_000);
    const chunks = textChunks(run);
    expect(chunks.join("")).toBe(run);
    expect(chunks.length).toBeGreaterThan(1000);
    expect(Math.max(...chunks.map((c) => c.length))).toBe(CHUNK);
  });

  it("never splits a surrogate pair, a combining mark, a ZWJ sequence or a variation selector", () => {
    const text = ("é🙂👩‍👩‍👧e\u0301\u0327☺\uFE0F👍🏽🇫🇷".repeat(40) + "x").repeat(5);
    const chunks = textChunks(text);
    expect(chunks.join("")).toBe(text);
    for (const c of chunks.slice(1)) {
      expect(c.charCodeAt(0) >= 0xdc00 && c.charCodeAt(0) <= 0xdfff, "starts with a low surrogate").toBe(false);
      expect(/^[\p{M}\u200D\uFE0F\u{1F3FB}-\u{1F3FF}]/u.test(c), `starts with a joining character: ${c}`).toBe(false);
    }
    for (const c of chunks) expect(c.endsWith("\u200D"), "ends with a zero-width joiner").toBe(false);
  });

  it("does not move earlier cuts when text is appended (only the last span re-renders)", () => {
    const a = "word ".repeat(200) + "B".repeat(500);
    const before = textChunks(a);
    const after = textChunks(a + "more text".repeat(30));
    expect(after.slice(0, before.length - 1)).toEqual(before.slice(0, -1));
  });
});

describe("PlainText", () => {
  it("renders spans of text only, whose textContent is the text, even when it looks like HTML", () => {
    const text = `<img src=x onerror="window.__pwned=1">`.repeat(50);
    const el = mount(<div><PlainText text={text} /></div>);
    expect(el.textContent).toBe(text);
    expect(el.querySelector("img")).toBeNull();
    expect(el.querySelectorAll("span").length).toBe(textChunks(text).length);
  });

  it("is what the streaming reply shows: a long unbroken run is cut, the text is unchanged", () => {
    const s = { ...newStream({ localId: 1, conversationId: 1, mode: { kind: "regenerate" }, maxTokens: 50 }), text: "Z".repeat(10_000) };
    const el = mount(<StreamingMessage stream={s} />);
    const content = el.querySelector(".message[data-status=streaming] .content")!;
    expect(content.textContent).toBe(s.text);
    expect(content.querySelectorAll("span:not(.cursor)").length).toBe(Math.ceil(10_000 / CHUNK));
  });
});
