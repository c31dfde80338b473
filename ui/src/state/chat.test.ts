// The chat reducer: how a generation rewrites the open conversation, before and after `started`,
// and what stays on screen when it stops or fails.
import { describe, expect, it } from "vitest";
import type { GenerationEvent } from "../generated/ipc";
import { conversation, message } from "../test/fixtures";
import { type ChatAction, type ChatState, chatReducer, initialChatState, liveStream, shownMessages } from "./chat";
import type { GenerationMode } from "./stream";

const u1 = message({ id: 1, role: "user", content: "first" });
const a1 = message({ id: 2, role: "assistant", content: "reply one" });
const u2 = message({ id: 3, role: "user", content: "second" });
const a2 = message({ id: 4, role: "assistant", content: "reply two" });

function opened(messages = [u1, a1, u2, a2]): ChatState {
  return chatReducer(initialChatState, { type: "conversationOpened", conversation: conversation({ id: 7, messages }) });
}

function run(state: ChatState, ...actions: ChatAction[]): ChatState {
  return actions.reduce(chatReducer, state);
}

const begin = (mode: GenerationMode, localId = 1): ChatAction => ({
  type: "generationBegin",
  start: { localId, conversationId: 7, mode, maxTokens: 100 },
});
const events = (list: GenerationEvent[], localId = 1): ChatAction => ({ type: "generationEvents", localId, events: list, at: 0 });
const ids = (s: ChatState) => shownMessages(s).map((m) => `${m.message.role}:${m.message.id}:${m.saved ? "saved" : "pending"}`);

describe("send", () => {
  it("previews the user text before started, then commits the saved user message", () => {
    let s = run(opened(), begin({ kind: "send", text: "third" }));
    const pending = shownMessages(s).at(-1)!;
    expect(pending.saved).toBe(false);
    expect(pending.message.content).toBe("third");
    expect(s.current!.messages).toHaveLength(4);

    const saved = message({ id: 5, role: "user", content: "third" });
    s = run(s, events([{ type: "queued", jobId: 3, position: 0 }, { type: "started", jobId: 3, conversationId: 7, userMessage: saved }]));
    expect(s.current!.messages.map((m) => m.id)).toEqual([1, 2, 3, 4, 5]);
    expect(ids(s).at(-1)).toBe("user:5:saved");
  });

  it("streams tokens into the live reply, then appends the saved assistant message once", () => {
    const saved = message({ id: 5, role: "user", content: "third" });
    const reply = message({ id: 6, role: "assistant", content: "Hi there" });
    let s = run(
      opened(),
      begin({ kind: "send", text: "third" }),
      events([
        { type: "started", jobId: 3, conversationId: 7, userMessage: saved },
        { type: "token", jobId: 3, index: 0, text: "Hi", think: false },
        { type: "token", jobId: 3, index: 1, text: " there", think: false },
      ]),
    );
    expect(liveStream(s)?.text).toBe("Hi there");
    s = run(s, events([{ type: "finished", jobId: 3, reason: "stop", message: reply }]));
    expect(liveStream(s)).toBeNull();
    expect(s.current!.messages.map((m) => m.id)).toEqual([1, 2, 3, 4, 5, 6]);
    // the same saved message again (e.g. from a reload) is not duplicated
    s = run(s, events([{ type: "finished", jobId: 3, reason: "stop", message: reply }]));
    expect(s.current!.messages).toHaveLength(6);
  });
});

describe("regenerate", () => {
  it("hides the last reply while pending and drops it on started", () => {
    let s = run(opened(), begin({ kind: "regenerate" }));
    expect(ids(s)).toEqual(["user:1:saved", "assistant:2:saved", "user:3:saved"]);
    s = run(s, events([{ type: "started", jobId: 3, conversationId: 7, userMessage: null }]));
    expect(s.current!.messages.map((m) => m.id)).toEqual([1, 2, 3]);
  });
});

describe("edit", () => {
  it("replaces the edited message's text and drops every later message", () => {
    let s = run(opened(), { type: "editStart", messageId: 1 });
    expect(s.editingId).toBe(1);
    s = run(s, begin({ kind: "edit", messageId: 1, text: "first, better" }));
    expect(s.editingId).toBeNull();
    expect(ids(s)).toEqual(["user:1:pending"]);
    expect(shownMessages(s)[0]!.message.content).toBe("first, better");
    const saved = message({ id: 1, role: "user", content: "first, better" });
    s = run(s, events([{ type: "started", jobId: 3, conversationId: 7, userMessage: saved }]));
    expect(s.current!.messages).toEqual([saved]);
  });
});

describe("stop and failure", () => {
  it("cancelled ends as a stopped message with its partial text", () => {
    const stopped = message({ id: 6, role: "assistant", content: "Hi", status: "stopped" });
    const s = run(
      opened(),
      begin({ kind: "send", text: "x" }),
      { type: "stopRequested" },
      events([
        { type: "started", jobId: 3, conversationId: 7, userMessage: message({ id: 5, role: "user", content: "x" }) },
        { type: "token", jobId: 3, index: 0, text: "Hi", think: false },
        { type: "finished", jobId: 3, reason: "cancelled", message: stopped },
      ]),
    );
    expect(s.stream!.phase.kind).toBe("stopped");
    expect(s.stream!.stopRequested).toBe(true);
    expect(s.current!.messages.at(-1)).toEqual(stopped);
    expect(s.error).toBeNull();
  });

  it("failed with nothing saved keeps the partial reply on screen and shows the error", () => {
    const error = { code: "INTERNAL" as const, message: "out of memory", details: "rss 9 GB" };
    const s = run(
      opened(),
      begin({ kind: "send", text: "x" }),
      events([
        { type: "started", jobId: 3, conversationId: 7, userMessage: message({ id: 5, role: "user", content: "x" }) },
        { type: "token", jobId: 3, index: 0, text: "half an ans", think: false },
        { type: "failed", jobId: 3, error, message: null },
      ]),
    );
    expect(liveStream(s)?.text).toBe("half an ans");
    expect(liveStream(s)?.phase.kind).toBe("failed");
    expect(s.error).toEqual(error);
  });

  it("failed with a saved partial appends it as a failed message", () => {
    const partial = message({ id: 6, role: "assistant", content: "half", status: "failed" });
    const s = run(
      opened(),
      begin({ kind: "regenerate" }),
      events([
        { type: "started", jobId: 3, conversationId: 7, userMessage: null },
        { type: "failed", jobId: 3, error: { code: "EXPERT_READ", message: "short read", details: null }, message: partial },
      ]),
    );
    expect(liveStream(s)).toBeNull();
    expect(s.current!.messages.map((m) => [m.id, m.status])).toEqual([[1, "complete"], [2, "complete"], [3, "complete"], [6, "failed"]]);
  });

  it("a rejected request removes the stream, keeps the conversation and shows the error", () => {
    const error = { code: "MODEL_NOT_LOADED" as const, message: "No model is loaded.", details: null };
    const s = run(opened(), begin({ kind: "send", text: "x" }), { type: "generationRejected", localId: 1, error });
    expect(s.stream).toBeNull();
    expect(s.error).toEqual(error);
    expect(ids(s)).toHaveLength(4);
  });
});

describe("bookkeeping", () => {
  it("ignores events from an older generation's channel", () => {
    const s = run(opened(), begin({ kind: "send", text: "x" }, 2), events([{ type: "token", jobId: 1, index: 0, text: "stale", think: false }], 1));
    expect(s.stream!.text).toBe("");
  });

  it("applies nothing to the open conversation when the generation belongs to another", () => {
    const other = conversation({ id: 8, messages: [u1] });
    const s = run(
      opened(),
      begin({ kind: "send", text: "x" }),
      { type: "conversationOpened", conversation: other },
      events([{ type: "started", jobId: 3, conversationId: 7, userMessage: message({ id: 9, role: "user", content: "x" }) }]),
    );
    expect(s.current!.messages).toEqual([u1]);
    expect(liveStream(s)).toBeNull();
    expect(s.stream!.started).toBe(true);
  });

  it("takes the open conversation's new title from the refreshed list", () => {
    const s = run(opened(), { type: "conversationsLoaded", conversations: [{ id: 7, title: "Named by the app", updatedAt: 2, messageCount: 4, backend: null }] });
    expect(s.current!.title).toBe("Named by the app");
  });

  it("deleting the open conversation closes it", () => {
    const s = run(opened(), { type: "conversationDeleted", id: 7 });
    expect(s.current).toBeNull();
  });
});
