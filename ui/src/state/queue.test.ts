import { describe, expect, it } from "vitest";
import type { QueueEntry, QueueState } from "../generated/ipc";
import { etaText, importFormatOf, progressOf, progressText, stoppedText, summaryText } from "./queue";

const entry = (over: Partial<QueueEntry>): QueueEntry => ({
  id: 1, label: "1", prompt: "p", system: null, status: "waiting", prefillDone: 0, prefillTotal: 0, tokens: 0,
  maxTokens: 100, seconds: 0, secondsPerToken: null, text: "", error: null, finish: null, ...over,
});
const state = (over: Partial<QueueState>): QueueState => ({
  items: [], waiting: 0, running: 0, done: 0, failed: 0, cancelled: 0, paused: false, halted: null, width: 1,
  etaSeconds: null, awakeRefused: null, unavailable: null, ...over,
});

describe("the queue's words", () => {
  it("tells the import format from the file name", () => {
    expect(importFormatOf("prompts.JSONL")).toBe("jsonl");
    expect(importFormatOf("a.csv")).toBe("csv");
    expect(importFormatOf("notes.txt")).toBe("lines");
    expect(importFormatOf("sheet.xlsx")).toBeNull();
  });

  it("shows a running prompt's prefill, then its tokens", () => {
    const prefill = entry({ status: "running", prefillDone: 64, prefillTotal: 512 });
    expect(progressText(prefill)).toBe("Reading the prompt: 64 of 512 tokens");
    expect(progressOf(prefill)).toBeCloseTo(0.0125);
    const writing = entry({ status: "running", tokens: 50, secondsPerToken: 0.5, seconds: 30 });
    expect(progressText(writing)).toBe("50 of at most 100 tokens · 0.5 s/token · 30 s");
    expect(progressOf(writing)).toBeCloseTo(0.55);
    expect(progressText(entry({ status: "done", tokens: 100, seconds: 192, finish: "length" }))).toBe("100 tokens in 3 m 12 s (token limit reached)");
    expect(progressText(entry({ status: "failed", error: "the prompt is longer than the context" }))).toContain("longer than the context");
  });

  it("summarises, gives the ETA only once measured, and says why it stopped", () => {
    expect(summaryText(state({}))).toBe("The queue is empty");
    expect(summaryText(state({ waiting: 3, done: 10, failed: 1 }))).toBe("3 waiting · 10 answered · 1 failed");
    expect(etaText(state({ waiting: 2 }))).toBe("Time left: known after the first answer");
    expect(etaText(state({ waiting: 2, etaSeconds: 250 }))).toBe("About 4 m 10 s left");
    expect(etaText(state({ done: 2 }))).toBeNull();
    expect(stoppedText(state({ waiting: 1, halted: "no model is loaded; open a model folder first" }))).toBe(
      "The queue stopped: no model is loaded; open a model folder first. Resume tries again.",
    );
    expect(stoppedText(state({ waiting: 2, paused: true }))).toContain("2 prompts wait");
    expect(stoppedText(state({ unavailable: "queue.jsonl, line 3: not JSON" }))).toContain("line 3");
  });
});
