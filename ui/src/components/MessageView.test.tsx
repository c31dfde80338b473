// Rendering of messages: selectors the end-to-end test relies on, the stats line figures, status,
// the thinking channel, and which actions are offered.
import { type ComponentChild, render } from "preact";
import { act } from "preact/test-utils";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Message } from "../generated/ipc";
import { setTransport } from "../api/engine";
import { newStream } from "../state/stream";
import { message, stats } from "../test/fixtures";
import { type MessageActions, MessageView } from "./MessageView";
import { DriveSpeed, StatsLine } from "./StatsLine";
import { StreamingMessage } from "./StreamingMessage";

let root: HTMLElement | null = null;

function mount(vnode: ComponentChild): HTMLElement {
  root = document.createElement("div");
  document.body.appendChild(root);
  act(() => render(vnode, root!));
  return root;
}

afterEach(() => {
  if (root) {
    const mounted = root;
    act(() => render(null, mounted));
    root.remove();
    root = null;
  }
});

const noActions = (): MessageActions => ({ onRegenerate: vi.fn(), onEdit: vi.fn(), onSaveEdit: vi.fn(), onCancelEdit: vi.fn() });

function view(m: Message, over: { saved?: boolean; canRegenerate?: boolean; canEdit?: boolean; editing?: boolean; actions?: MessageActions } = {}) {
  return mount(
    <MessageView
      message={m}
      saved={over.saved ?? true}
      canRegenerate={over.canRegenerate ?? false}
      canEdit={over.canEdit ?? false}
      editing={over.editing ?? false}
      actions={over.actions ?? noActions()}
    />,
  );
}

describe("MessageView", () => {
  it("renders an assistant message with its stats line in GB, s/token and shares", () => {
    const el = view(message({ id: 12, role: "assistant", content: "**Hi**", stats: stats() }));
    const msg = el.querySelector(".message")!;
    expect(msg.getAttribute("data-role")).toBe("assistant");
    expect(msg.getAttribute("data-status")).toBe("complete");
    expect(msg.getAttribute("data-id")).toBe("12");
    expect(msg.querySelector(".content strong")?.textContent).toBe("Hi");
    const stat = (k: string) => msg.querySelector(`.stats [data-stat=${k}]`)?.textContent;
    expect(stat("tokens")).toBe("1,234 prompt + 512 output tokens");
    expect(stat("ttft")).toBe("first token 1 m 23 s");
    expect(stat("spt")).toBe("5.6 s/token");
    expect(stat("total")).toBe("total 49 m 10 s");
    expect(stat("io")).toBe("I/O 134% of wall clock (can exceed 100%)");
    expect(stat("hit")).toBe("true hit rate 31%");
    expect(stat("read")).toBe("read 26.51 GB at 0.00899 GB/s");
    expect(msg.querySelector(".stats [data-stat=read]")?.getAttribute("title")).toMatch(/^26,512,345,678 B — the rate is bytes read ÷ the reply's wall time$/);
    expect(msg.querySelector(".stats")!.textContent).not.toMatch(/tok\/s|tokens\/s|GiB/);
  });

  it("compares the reply's read rate with the drive's best from the speed test", () => {
    const el = mount(
      <DriveSpeed.Provider value={2.8e9}>
        <StatsLine stats={stats({ bytesRead: 4.3e9, totalMs: 2000 })} />
      </DriveSpeed.Provider>,
    );
    expect(el.querySelector("[data-stat=read]")?.textContent).toBe("read 4.30 GB at 2.15 of 2.80 GB/s");
    expect(el.querySelector("[data-stat=read]")?.getAttribute("title")).toMatch(/this drive's best in the setup speed test/);
  });

  it("warns when the conversation nears its context length, and says 'context full' once it is full", () => {
    const near = mount(<StatsLine stats={stats({ promptTokens: 3600, outputTokens: 200, contextLength: 4096, contextNearlyFull: true })} />);
    expect(near.querySelector("[data-stat=context]")?.textContent).toBe("context nearly full: 3,800 of 4,096 positions");
    act(() => render(<StatsLine stats={stats({ contextLength: 4096, contextNearlyFull: false })} />, near));
    expect(near.querySelector("[data-stat=context]")).toBeNull();
    act(() => render(<StatsLine stats={stats({ contextNearlyFull: true, finishReason: "contextFull" })} />, near));
    expect(near.querySelector("[data-stat=context]")).toBeNull();
    expect(near.querySelector("[data-stat=reason]")?.textContent).toBe("context full");
  });

  it("says 'all resident' when there is no true hit rate, and marks a stopped reply", () => {
    const el = view(
      message({ id: 3, role: "assistant", content: "part", status: "stopped", stats: stats({ trueHitRate: null, finishReason: "cancelled", ioShare: null }) }),
    );
    const msg = el.querySelector(".message")!;
    expect(msg.getAttribute("data-status")).toBe("stopped");
    expect(msg.querySelector("[data-stat=hit]")?.textContent).toBe("all resident");
    expect(msg.querySelector("[data-stat=io]")?.textContent).toBe("I/O share n/a");
    expect(msg.querySelector("[data-stat=reason]")?.textContent).toBe("stopped");
    expect(msg.querySelector(".badge")?.textContent).toBe("Stopped");
  });

  it("shows a failed message as failed", () => {
    const el = view(message({ id: 3, role: "assistant", content: "half", status: "failed" }));
    expect(el.querySelector(".message")!.getAttribute("data-status")).toBe("failed");
    expect(el.querySelector(".badge.failed")?.textContent).toContain("Failed");
  });

  it("shows thinking collapsed with its length", () => {
    const el = view(message({ id: 3, role: "assistant", content: "answer", think: "let me think" }));
    const details = el.querySelector("details.think") as HTMLDetailsElement;
    expect(details.open).toBe(false);
    expect(details.querySelector("summary")?.textContent).toBe("Thinking · 12 characters");
  });

  it("shows an assistant's tool calls and a tool's result as collapsed blocks of text, never HTML", () => {
    const calls = view(
      message({
        id: 5,
        role: "assistant",
        content: "",
        toolCalls: [
          { id: "call_1", tool: "weather", index: 1, arguments: '{"city":"<b>Bath</b>","when":{"day":3}}' },
          { id: "call_2", tool: "clock", index: 2, arguments: "not json" },
        ],
      }),
    );
    const blocks = [...calls.querySelectorAll("details.tool-call")];
    expect(blocks.map((b) => b.getAttribute("data-tool"))).toEqual(["weather", "clock"]);
    expect(blocks.every((b) => !(b as HTMLDetailsElement).open)).toBe(true);
    const [weather, clock] = blocks as [Element, Element];
    expect(weather.querySelector("summary")?.textContent).toBe("Calls weather · call 1");
    expect(weather.querySelector(".tool-text")?.textContent).toBe('{\n  "city": "<b>Bath</b>",\n  "when": {\n    "day": 3\n  }\n}');
    expect(weather.querySelector("b")).toBeNull();
    expect(clock.querySelector(".tool-text")?.textContent).toBe("not json");
    expect(calls.querySelector(".markdown")).toBeNull();

    const result = view(
      message({ id: 6, role: "tool", content: "<img src=x onerror=alert(1)>Rain", toolAnswer: { callId: "call_1", tool: "weather", index: 1, server: "Weather desk", cutFromBytes: null } }),
    );
    const article = result.querySelector("article.message")!;
    expect(article.getAttribute("data-role")).toBe("tool");
    expect(article.querySelector(".who")?.textContent).toBe("Tool");
    const block = result.querySelector("details.tool-result")!;
    expect(block.querySelector("summary")?.textContent).toBe("Result of weather · call 1 · Weather desk · 32 characters");
    expect(block.querySelector(".tool-text")?.textContent).toBe("<img src=x onerror=alert(1)>Rain");
    expect(block.querySelector("img")).toBeNull();
  });

  it("renders user text as plain text, never HTML", () => {
    const el = view(message({ id: 1, role: "user", content: "<b>x</b> **y**" }));
    expect(el.querySelector(".content b")).toBeNull();
    expect(el.querySelector(".content")?.textContent).toBe("<b>x</b> **y**");
  });

  it("offers Edit on user messages and Regenerate only where allowed, calling back with the id", () => {
    const actions = noActions();
    const el = view(message({ id: 9, role: "user", content: "q" }), { canEdit: true, actions });
    expect(el.querySelector('[aria-label="Regenerate"]')).toBeNull();
    act(() => (el.querySelector('[aria-label="Edit message"]') as HTMLButtonElement).click());
    expect(actions.onEdit).toHaveBeenCalledWith(9);

    const a = noActions();
    const el2 = view(message({ id: 10, role: "assistant", content: "a" }), { canRegenerate: true, actions: a });
    act(() => (el2.querySelector('[aria-label="Regenerate"]') as HTMLButtonElement).click());
    expect(a.onRegenerate).toHaveBeenCalledOnce();
  });

  it("inline editor: Save and resend sends the new text, Escape cancels", () => {
    const actions = noActions();
    const el = view(message({ id: 9, role: "user", content: "old" }), { editing: true, actions });
    const box = el.querySelector("textarea") as HTMLTextAreaElement;
    expect(box.value).toBe("old");
    act(() => {
      box.value = "new text";
      box.dispatchEvent(new Event("input", { bubbles: true }));
    });
    act(() => (el.querySelector('[aria-label="Save and resend"]') as HTMLButtonElement).click());
    expect(actions.onSaveEdit).toHaveBeenCalledWith(9, "new text");
    act(() => void box.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true })));
    expect(actions.onCancelEdit).toHaveBeenCalledOnce();
  });

  it("code blocks get a working Copy button (delegated click, no inline handler)", async () => {
    const writeText = vi.fn().mockResolvedValue(undefined);
    Object.defineProperty(navigator, "clipboard", { value: { writeText }, configurable: true });
    const el = view(message({ id: 5, role: "assistant", content: "```python\nprint('hi')\n```\n" }));
    const button = el.querySelector<HTMLButtonElement>(".code-block button.copy-code")!;
    expect(button.getAttribute("onclick")).toBeNull();
    await act(async () => button.click());
    expect(writeText).toHaveBeenCalledWith("print('hi')\n");
    expect(button.textContent).toBe("Copied");
  });

  it("a link click opens it through the app (system browser), never navigating the window", async () => {
    const call = vi.fn().mockResolvedValue(null);
    setTransport({ call, generate: vi.fn(), stream: vi.fn() });
    const el = view(message({ id: 6, role: "assistant", content: "See [the report](https://example.org/k3)." }));
    const link = el.querySelector<HTMLAnchorElement>("a[href]")!;
    const click = new MouseEvent("click", { bubbles: true, cancelable: true });
    await act(async () => {
      link.dispatchEvent(click);
    });
    expect(click.defaultPrevented).toBe(true);
    expect(call).toHaveBeenCalledWith("open_link", { url: "https://example.org/k3" });
    setTransport(null);
  });

  it("a middle click on a link opens it through the app too, never in a new window", async () => {
    const call = vi.fn().mockResolvedValue(null);
    setTransport({ call, generate: vi.fn(), stream: vi.fn() });
    const el = view(message({ id: 7, role: "assistant", content: "See [the report](https://example.org/k3)." }));
    const link = el.querySelector<HTMLAnchorElement>("a[href]")!;
    const right = new MouseEvent("auxclick", { bubbles: true, cancelable: true, button: 2 });
    const middle = new MouseEvent("auxclick", { bubbles: true, cancelable: true, button: 1 });
    await act(async () => {
      link.dispatchEvent(right);
      link.dispatchEvent(middle);
    });
    expect(right.defaultPrevented).toBe(false);
    expect(middle.defaultPrevented).toBe(true);
    expect(call).toHaveBeenCalledTimes(1);
    expect(call).toHaveBeenCalledWith("open_link", { url: "https://example.org/k3" });
    setTransport(null);
  });

  it("a preview not yet saved has no data-id and no actions", () => {
    const el = view(message({ id: -1, role: "user", content: "pending" }), { saved: false, canEdit: true });
    expect(el.querySelector(".message")!.hasAttribute("data-id")).toBe(false);
    expect(el.querySelector("button")).toBeNull();
  });
});

describe("StreamingMessage", () => {
  it("shows the assembled text in a polite live region with the phase", () => {
    const s = { ...newStream({ localId: 1, conversationId: 1, mode: { kind: "regenerate" }, maxTokens: 50 }), text: "Hello wor", tokens: 3 };
    const el = mount(<StreamingMessage stream={{ ...s, phase: { kind: "writing", tokens: 3, maxTokens: 50, secondsPerToken: null } }} />);
    const msg = el.querySelector(".message[data-status=streaming]")!;
    expect(msg.getAttribute("data-role")).toBe("assistant");
    expect(msg.hasAttribute("data-id")).toBe(false);
    const content = msg.querySelector(".content")!;
    expect(content.textContent).toBe("Hello wor");
    expect(content.getAttribute("aria-live")).toBe("polite");
    expect(msg.querySelector(".badge")?.textContent).toBe("Writing token 3/50 · — s/token");
  });

  it("shows the thinking channel in its collapsed block, apart from the answer", () => {
    const s = { ...newStream({ localId: 1, conversationId: 1, mode: { kind: "regenerate" }, maxTokens: 50 }), think: "Hmm.", text: "Yes" };
    const el = mount(<StreamingMessage stream={s} />);
    expect(el.querySelector("details.think summary")?.textContent).toBe("Thinking · 4 characters");
    expect(el.querySelector("details.think .think-text")?.textContent).toBe("Hmm.");
    expect(el.querySelector(".content")?.textContent).toBe("Yes");
  });

  it("a failed stream keeps its partial text and says why", () => {
    const s = newStream({ localId: 1, conversationId: 1, mode: { kind: "regenerate" }, maxTokens: 50 });
    const failed = { ...s, text: "partial", phase: { kind: "failed" as const, error: { code: "INTERNAL" as const, message: "boom", details: null } } };
    const el = mount(<StreamingMessage stream={failed} />);
    const msg = el.querySelector(".message")!;
    expect(msg.getAttribute("data-status")).toBe("failed");
    expect(msg.querySelector(".content")?.textContent).toBe("partial");
    expect(msg.querySelector(".badge")?.textContent).toBe("Failed: boom");
  });
});
