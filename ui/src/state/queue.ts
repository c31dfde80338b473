// The Queue tab, the pure half: which import format a file is, each prompt's progress in words
// and as a fraction, the queue's summary and ETA, and why it is not running.
// Tested in queue.test.ts; the component (QueueView.tsx) only draws and forwards.
import type { QueueEntry, QueueImportFormat, QueueState } from "../generated/ipc";
import { formatCount, formatDuration, formatSecondsPerToken } from "./format";

/** The import format of a file, from its name; null when it is neither JSONL nor CSV. */
export function importFormatOf(fileName: string): QueueImportFormat | null {
  const name = fileName.toLowerCase();
  if (name.endsWith(".jsonl") || name.endsWith(".ndjson")) return "jsonl";
  if (name.endsWith(".csv")) return "csv";
  if (name.endsWith(".txt")) return "lines";
  return null;
}

/** How far a running prompt is, 0..1: the prompt's prefill, then its tokens of its limit. */
export function progressOf(e: QueueEntry): number {
  if (e.status !== "running") return e.status === "waiting" ? 0 : 1;
  if (e.tokens === 0 && e.prefillTotal > 0) return (0.1 * e.prefillDone) / e.prefillTotal;
  return e.maxTokens > 0 ? Math.min(1, 0.1 + (0.9 * e.tokens) / e.maxTokens) : 0;
}

/** One line on where a prompt is. */
export function progressText(e: QueueEntry): string {
  switch (e.status) {
    case "waiting":
      return "Waiting";
    case "running":
      if (e.tokens === 0) {
        return e.prefillTotal > 0 ? `Reading the prompt: ${formatCount(e.prefillDone)} of ${formatCount(e.prefillTotal)} tokens` : "Starting…";
      }
      return `${formatCount(e.tokens)} of at most ${formatCount(e.maxTokens)} tokens · ${formatSecondsPerToken(e.secondsPerToken)} · ${formatDuration(e.seconds * 1000)}`;
    case "done":
      return `${formatCount(e.tokens)} tokens in ${formatDuration(e.seconds * 1000)}${e.finish === "length" ? " (token limit reached)" : e.finish === "context_full" ? " (context full)" : ""}`;
    case "failed":
      return `Failed: ${e.error ?? "the engine refused it"}`;
    case "cancelled":
      return e.text ? `Cancelled after ${formatCount(e.text.length)} characters` : "Cancelled";
  }
}

/** "3 waiting · 1 running · 10 answered · 1 failed" (counts of zero left out). */
export function summaryText(q: QueueState): string {
  const parts: [number, string][] = [
    [q.waiting, "waiting"],
    [q.running, "running"],
    [q.done, "answered"],
    [q.failed, "failed"],
    [q.cancelled, "cancelled"],
  ];
  const shown = parts.filter(([n]) => n > 0).map(([n, what]) => `${formatCount(n)} ${what}`);
  return shown.length === 0 ? "The queue is empty" : shown.join(" · ");
}

/** When the queue will be through, from its measured times; what it waits for otherwise. */
export function etaText(q: QueueState): string | null {
  if (q.waiting + q.running === 0) return null;
  if (q.paused) return "Paused";
  if (q.halted) return "Stopped";
  if (q.etaSeconds === null) return "Time left: known after the first answer";
  return `About ${formatDuration(q.etaSeconds * 1000)} left`;
}

/** The words on the banner of a queue that is not running although prompts wait; null when none. */
export function stoppedText(q: QueueState): string | null {
  if (q.unavailable) return `The queue cannot be used: ${q.unavailable}`;
  if (q.halted) return `The queue stopped: ${q.halted}. Resume tries again.`;
  if (q.paused && q.waiting > 0) return `Paused: ${formatCount(q.waiting)} prompts wait. A prompt the pause stopped runs again from its start.`;
  return null;
}

/** True when Clear finished has something to clear. */
export const hasFinished = (q: QueueState) => q.done + q.failed + q.cancelled > 0;
