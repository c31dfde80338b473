// The stream reducer: every GenerationEvent type, token assembly, phases and live stats.
import { describe, expect, it } from "vitest";
import type { GenerationEvent } from "../generated/ipc";
import { message } from "../test/fixtures";
import { isRunning, newStream, type Stream, streamReducer } from "./stream";

const start = () => newStream({ localId: 1, conversationId: 5, mode: { kind: "send", text: "hi" }, maxTokens: 64 });

function fold(events: GenerationEvent[], s: Stream = start(), at = 1000): Stream {
  return events.reduce((acc, e) => streamReducer(acc, e, at), s);
}

const tok = (index: number, text: string): GenerationEvent => ({ type: "token", jobId: 9, index, text, think: false });

describe("streamReducer", () => {
  it("starts in the starting phase with nothing assembled", () => {
    const s = start();
    expect(s.phase).toEqual({ kind: "starting" });
    expect(s.text).toBe("");
    expect(isRunning(s)).toBe(true);
  });

  it("queued: adopts the job id from the first event and shows the queue position", () => {
    const s = fold([{ type: "queued", jobId: 9, position: 2 }]);
    expect(s.jobId).toBe(9);
    expect(s.phase).toEqual({ kind: "queued", position: 2 });
  });

  it("started: keeps the saved user message and begins reading the prompt", () => {
    const user = message({ id: 41, role: "user", content: "hi" });
    const s = fold([{ type: "started", jobId: 9, conversationId: 5, userMessage: user }]);
    expect(s.started).toBe(true);
    expect(s.userMessage).toEqual(user);
    expect(s.promptTokens).toBe(null);
    expect(s.phase).toEqual({ kind: "prefill", done: 0, total: null, etaMs: null });
  });

  it("prefillProgress: done/total with an ETA from the rate since started", () => {
    let s = streamReducer(start(), { type: "started", jobId: 9, conversationId: 5, userMessage: null }, 1000);
    s = streamReducer(s, { type: "prefillProgress", jobId: 9, done: 100, total: 300 }, 3000);
    // 100 tokens in 2000 ms → 200 left ≈ 4000 ms
    expect(s.phase).toEqual({ kind: "prefill", done: 100, total: 300, etaMs: 4000 });
  });

  it("token: appends deltas in order, counts tokens, tolerates empty text", () => {
    const s = fold([tok(0, "Hel"), tok(1, ""), tok(2, "lo"), tok(3, " world")]);
    expect(s.text).toBe("Hello world");
    expect(s.tokens).toBe(4);
    expect(s.phase).toEqual({ kind: "writing", tokens: 4, maxTokens: 64, secondsPerToken: null });
  });

  it("token: thinking-channel deltas assemble apart from the answer", () => {
    const think = (index: number, text: string): GenerationEvent => ({ type: "token", jobId: 9, index, text, think: true });
    const s = fold([think(0, "Let me "), think(1, "see."), tok(2, ""), tok(3, "Yes.")]);
    expect(s.think).toBe("Let me see.");
    expect(s.text).toBe("Yes.");
    expect(s.tokens).toBe(4);
  });

  it("accumulates a thousand tokens exactly", () => {
    const events = Array.from({ length: 1000 }, (_, i) => tok(i, `${i},`));
    const s = fold(events);
    expect(s.text).toBe(Array.from({ length: 1000 }, (_, i) => `${i},`).join(""));
    expect(s.tokens).toBe(1000);
  });

  it("stats: stores live figures and feeds s/token into the writing phase", () => {
    const s = fold([
      tok(0, "a"),
      { type: "stats", jobId: 9, tokens: 1, elapsedMs: 5600, secondsPerToken: 5.6, ioShare: 1.2, trueHitRate: null },
    ]);
    expect(s.live).toEqual({ tokens: 1, elapsedMs: 5600, secondsPerToken: 5.6, ioShare: 1.2, trueHitRate: null });
    expect(s.phase).toEqual({ kind: "writing", tokens: 1, maxTokens: 64, secondsPerToken: 5.6 });
  });

  it("stats before any token leaves the prefill phase alone", () => {
    const s = fold([
      { type: "started", jobId: 9, conversationId: 5, userMessage: null },
      { type: "stats", jobId: 9, tokens: 0, elapsedMs: 10, secondsPerToken: null, ioShare: 0.5, trueHitRate: 0.2 },
    ]);
    expect(s.phase.kind).toBe("prefill");
    expect(s.live?.trueHitRate).toBe(0.2);
  });

  it("finished stop/length: done with the saved message", () => {
    const reply = message({ id: 42, role: "assistant", content: "ab" });
    const s = fold([tok(0, "a"), tok(1, "b"), { type: "finished", jobId: 9, reason: "length", message: reply }]);
    expect(s.phase).toEqual({ kind: "done", reason: "length" });
    expect(s.result).toEqual(reply);
    expect(isRunning(s)).toBe(false);
  });

  it("finished cancelled → stopped, never failed", () => {
    const reply = message({ id: 42, role: "assistant", content: "a", status: "stopped" });
    const s = fold([tok(0, "a"), { type: "finished", jobId: 9, reason: "cancelled", message: reply }]);
    expect(s.phase).toEqual({ kind: "stopped" });
    expect(s.result?.status).toBe("stopped");
    expect(isRunning(s)).toBe(false);
  });

  it("failed keeps the partial text and the error, with or without a saved message", () => {
    const error = { code: "EXPERT_READ" as const, message: "shard 37 offset 123: short read", details: null };
    const s = fold([tok(0, "par"), tok(1, "tial"), { type: "failed", jobId: 9, error, message: null }]);
    expect(s.text).toBe("partial");
    expect(s.phase).toEqual({ kind: "failed", error });
    expect(s.result).toBeNull();
    const saved = message({ id: 43, role: "assistant", content: "partial", status: "failed" });
    const t = fold([tok(0, "partial"), { type: "failed", jobId: 9, error, message: saved }]);
    expect(t.result).toEqual(saved);
  });

  it("ignores events of another job once the job id is known", () => {
    const s = fold([tok(0, "a"), { type: "token", jobId: 10, index: 1, text: "X", think: false }]);
    expect(s.text).toBe("a");
    expect(s.tokens).toBe(1);
  });
});
