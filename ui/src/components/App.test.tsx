// The whole window against a scripted backend: start-up, send → stream → saved reply, Stop and Esc
// calling cancel_generation, Ctrl+N, delete with confirmation, and errors landing in the alert region.
import { render } from "preact";
import { act } from "preact/test-utils";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { setTransport, type Transport } from "../api/engine";
import type { Conversation, GenerationEvent, HistoryNotice, ModelInfo } from "../generated/ipc";
import { conversation, message } from "../test/fixtures";
import { App } from "./App";
import { DEMO_TEXT } from "./ModelBar";

const demo: ModelInfo = {
  path: "/bundled", name: "k3-demo", isDemo: true, layers: 4, hiddenSize: 64, vocabSize: 1000, routedExperts: 16,
  expertsPerToken: 4, checkpointBytes: 40_000_000, memory: "0.04 GB resident", loadMs: 5,
};

class Scripted implements Transport {
  calls: [string, Record<string, unknown>][] = [];
  convs: Conversation[] = [];
  emit: (e: GenerationEvent) => void = () => undefined;
  failures: Record<string, unknown> = {};
  historyNotice: HistoryNotice | null = null;
  async stream<T>(cmd: string): Promise<T> {
    throw new Error(`${cmd} is not scripted`);
  }
  async call<T>(cmd: string, args: Record<string, unknown>): Promise<T> {
    this.calls.push([cmd, args]);
    if (cmd in this.failures) throw this.failures[cmd];
    const answer: Record<string, () => unknown> = {
      current_model: () => ({ model: demo, error: null }),
      history_notice: () => this.historyNotice,
      list_conversations: () => this.convs.map((c) => ({ id: c.id, title: c.title, updatedAt: c.updatedAt, messageCount: c.messages.length })),
      create_conversation: () => {
        const c = conversation({ id: 100 + this.convs.length, title: "New chat" });
        this.convs.unshift(c);
        return c;
      },
      get_conversation: () => this.convs.find((c) => c.id === args.id),
      delete_conversation: () => ((this.convs = this.convs.filter((c) => c.id !== args.id)), null),
      cancel_generation: () => true,
      pick_model_folder: () => "/models/broken",
    };
    return answer[cmd]!() as T;
  }
  async generate(cmd: string, args: Record<string, unknown>, onEvent: (e: GenerationEvent) => void): Promise<number> {
    this.calls.push([cmd, args]);
    this.emit = onEvent;
    return 31;
  }
  names() {
    return this.calls.map((c) => c[0]);
  }
}

let root: HTMLElement;
let backend: Scripted;

const flush = () => act(() => new Promise<void>((r) => setTimeout(r, 40)));
const $ = <T extends Element = HTMLElement>(sel: string) => root.querySelector<T>(sel);
const click = (sel: string) => act(() => $<HTMLButtonElement>(sel)!.click());
const key = (target: EventTarget, k: string, opts: KeyboardEventInit = {}) =>
  act(() => void target.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true, ...opts })));

async function start(convs: Conversation[] = []) {
  backend.convs = convs;
  act(() => render(<App />, root));
  await flush();
}

beforeEach(() => {
  backend = new Scripted();
  setTransport(backend);
  localStorage.clear();
  root = document.createElement("div");
  document.body.appendChild(root);
});

afterEach(() => {
  // Inside act, so the effects' cleanups run now: outside it Preact defers them to a timer,
  // which on a loaded machine fired after the test environment was gone ("window is not
  // defined", an unhandled error that failed the run).
  act(() => render(null, root));
  root.remove();
  setTransport(null);
});

describe("App", () => {
  it("loads the model and opens the newest conversation, with the demo banner", async () => {
    await start([conversation({ id: 2, title: "Newest", messages: [message({ id: 1, role: "user", content: "hello" })] }), conversation({ id: 1 })]);
    expect($("[data-testid=demo-banner]")?.textContent).toBe(DEMO_TEXT);
    expect([...root.querySelectorAll("[data-testid=conversation-list] li")].map((li) => li.getAttribute("data-id"))).toEqual(["2", "1"]);
    expect($(".message[data-role=user]")?.getAttribute("data-id")).toBe("1");
    expect($("[data-testid=phase]")?.textContent).toBe("Ready");
  });

  it("sends with Enter, streams tokens, stops with Esc via cancel_generation, and shows the stopped reply", async () => {
    await start();
    const box = $<HTMLTextAreaElement>("#composer")!;
    act(() => {
      box.value = "Hi there";
      box.dispatchEvent(new Event("input", { bubbles: true }));
    });
    key(box, "Enter", { shiftKey: true });
    await flush();
    expect(backend.names()).not.toContain("send_message");
    key(box, "Enter");
    await flush();
    expect(backend.names()).toContain("create_conversation");
    expect(backend.calls.find((c) => c[0] === "send_message")![1]).toEqual({ conversationId: 100, text: "Hi there" });
    expect(box.value).toBe("");
    expect($('[aria-label="Stop"]')).not.toBeNull();

    const user = message({ id: 7, role: "user", content: "Hi there" });
    backend.emit({ type: "queued", jobId: 31, position: 0 });
    backend.emit({ type: "started", jobId: 31, conversationId: 100, userMessage: user });
    for (let i = 0; i < 50; i++) backend.emit({ type: "token", jobId: 31, index: i, text: `w${i} `, think: false });
    backend.emit({ type: "stats", jobId: 31, tokens: 50, elapsedMs: 50, secondsPerToken: 0.001, ioShare: null, trueHitRate: null });
    await flush();
    expect($(".message[data-status=streaming] .content")?.textContent).toContain("w0 w1 w2");
    expect($(".message[data-status=streaming] .content")?.textContent).toContain("w49");
    expect($("[data-testid=phase]")?.textContent).toBe("Writing token 50/100 · 0.001 s/token · at most 50 ms left");
    expect($('.message[data-role=user][data-id="7"]')).not.toBeNull();

    key(window, "Escape");
    await flush();
    expect(backend.calls.filter((c) => c[0] === "cancel_generation")).toEqual([["cancel_generation", { jobId: 31 }]]);

    const reply = message({ id: 8, role: "assistant", content: "w0 w1", status: "stopped" });
    backend.emit({ type: "finished", jobId: 31, reason: "cancelled", message: reply });
    await flush();
    expect($(".message[data-status=streaming]")).toBeNull();
    expect($('.message[data-role=assistant][data-id="8"]')?.getAttribute("data-status")).toBe("stopped");
    expect($("[data-testid=phase]")?.textContent).toBe("Stopped");
    expect($('[aria-label="Send"]')).not.toBeNull();
    expect($('[aria-label="Regenerate"]')).not.toBeNull();
  });

  it("Stop pressed before the job id arrives still cancels that job", async () => {
    await start([conversation({ id: 1 })]);
    let release: (n: number) => void = () => undefined;
    backend.generate = async (cmd, args, onEvent) => {
      backend.calls.push([cmd, args]);
      backend.emit = onEvent;
      return new Promise<number>((r) => (release = r));
    };
    const box = $<HTMLTextAreaElement>("#composer")!;
    act(() => {
      box.value = "x";
      box.dispatchEvent(new Event("input", { bubbles: true }));
    });
    key(box, "Enter");
    await flush();
    click('[aria-label="Stop"]');
    await flush();
    expect(backend.names()).not.toContain("cancel_generation");
    await act(async () => release(44));
    await flush();
    expect(backend.calls.filter((c) => c[0] === "cancel_generation")).toEqual([["cancel_generation", { jobId: 44 }]]);
  });

  it("Ctrl+N opens a new chat, but not a second empty one", async () => {
    await start([conversation({ id: 1, messages: [message({ id: 1, role: "user", content: "q" })] })]);
    key(window, "n", { ctrlKey: true });
    await flush();
    key(window, "n", { ctrlKey: true });
    await flush();
    expect(backend.names().filter((n) => n === "create_conversation")).toHaveLength(1);
    expect($("[data-testid=conversation-list] li.current")?.getAttribute("data-id")).toBe("101");
  });

  it("shows the history's startup notice until it is dismissed", async () => {
    backend.historyNotice = {
      kind: "damaged",
      message: "Your chat history /d/chats.sqlite could not be used: it is empty (0 bytes). It was moved, unchanged, to /d/chats.sqlite.damaged-x.",
      file: "/d/chats.sqlite",
      setAside: ["/d/chats.sqlite.damaged-x"],
      saved: true,
    };
    await start();
    expect(backend.names()).toContain("history_notice");
    expect($("[data-testid=history-notice]")!.textContent).toContain("/d/chats.sqlite.damaged-x");
    await click("[aria-label='Dismiss history notice']");
    expect($("[data-testid=history-notice]")).toBeNull();
  });

  it("deletes only after confirmation", async () => {
    await start([conversation({ id: 1 })]);
    click('[data-testid=conversation-list] li[data-id="1"] [aria-label="Delete conversation"]');
    expect(backend.names()).not.toContain("delete_conversation");
    click('[aria-label="Cancel delete"]');
    click('[data-testid=conversation-list] li[data-id="1"] [aria-label="Delete conversation"]');
    click('[aria-label="Confirm delete"]');
    await flush();
    expect(backend.calls.find((c) => c[0] === "delete_conversation")).toEqual(["delete_conversation", { id: 1 }]);
    expect(root.querySelectorAll("[data-testid=conversation-list] li")).toHaveLength(0);
  });

  it("a model folder that fails to open shows its IpcError in the alert region", async () => {
    await start();
    backend.failures.open_model = { code: "MODEL_CONFIG", message: "config.json: missing field num_experts", details: "at line 3" };
    click('[aria-label="Open model folder"]');
    await flush();
    expect(backend.calls.find((c) => c[0] === "open_model")).toEqual(["open_model", { path: "/models/broken" }]);
    const alert = $("[role=alert]")!;
    expect(alert.textContent).toContain("config.json: missing field num_experts");
    expect(alert.textContent).toContain("MODEL_CONFIG");
    expect($('[aria-label="Open model folder"]')).not.toBeNull();
    click('[aria-label="Dismiss error"]');
    expect($("[role=alert]")).toBeNull();
  });

  it("saves settings through update_conversation and rejects bad values in the alert region", async () => {
    await start([conversation({ id: 1 })]);
    backend.call = (async (cmd: string, args: Record<string, unknown>) => {
      backend.calls.push([cmd, args]);
      if (cmd === "update_conversation") return { ...conversation({ id: 1 }), ...args, updatedAt: 5 };
      return Scripted.prototype.call.call(backend, cmd, args);
    }) as Transport["call"];
    click('[aria-label="Conversation settings"]');
    const set = (sel: string, v: string) =>
      act(() => {
        const el = $<HTMLInputElement>(sel)!;
        el.value = v;
        el.dispatchEvent(new Event("input", { bubbles: true }));
      });
    set("#max-tokens", "0");
    click('[aria-label="Save settings"]');
    await flush();
    expect($("[role=alert]")?.textContent).toContain("Max tokens");
    set("#max-tokens", "64");
    set("#temperature", "0");
    set("#system-prompt", "Be brief.");
    expect($<HTMLSelectElement>("#thinking-effort")!.disabled).toBe(true);
    act(() => $<HTMLInputElement>("#thinking")!.click());
    expect($<HTMLSelectElement>("#thinking-effort")!.disabled).toBe(false);
    act(() => {
      const effort = $<HTMLSelectElement>("#thinking-effort")!;
      effort.value = "max";
      effort.dispatchEvent(new Event("change", { bubbles: true }));
    });
    click('[aria-label="Save settings"]');
    await flush();
    const update = backend.calls.find((c) => c[0] === "update_conversation")!;
    expect(update[1]).toEqual({
      id: 1,
      title: "Chat",
      systemPrompt: "Be brief.",
      settings: {
        temperature: 0, topP: 1, seed: 1, maxTokens: 64, thinking: true, thinkingEffort: "max",
        toolServers: [], toolsOff: [], toolChoice: "auto",
      },
    });
    expect($("[role=alert]")).toBeNull();
  });
});
