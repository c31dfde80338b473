// The reply being generated: phase, assembled text and live figures, folded from GenerationEvents.
// Owns: the exhaustive switch on GenerationEvent `type` (a new event kind fails to compile here),
// the phase shown on the strip, and prefill ETA from batch timestamps.
// Must not: touch the conversation (chat.ts applies started/finished to it) or call the engine.
// Easy to break: events may arrive before send_message resolves with the job id, so the stream adopts
// the first event's jobId; cancelled is a finish reason (phase "stopped"), never a failure.
import type { FinishReason, GenerationEvent, IpcError, Message } from "../generated/ipc";

/** What the user asked for; decides how `started` rewrites the conversation. */
export type GenerationMode =
  | { kind: "send"; text: string }
  | { kind: "regenerate" }
  | { kind: "edit"; messageId: number; text: string }
  /** The reply to the tool results after the last reply (the next step of a tool loop). */
  | { kind: "continue" };

export type Phase =
  | { kind: "starting" }
  | { kind: "queued"; position: number }
  | { kind: "prefill"; done: number; total: number | null; etaMs: number | null }
  | { kind: "writing"; tokens: number; maxTokens: number; secondsPerToken: number | null }
  | { kind: "done"; reason: Exclude<FinishReason, "cancelled"> }
  | { kind: "stopped" }
  | { kind: "failed"; error: IpcError };

/** Latest `stats` event. */
export interface LiveStats {
  tokens: number;
  elapsedMs: number;
  secondsPerToken: number | null;
  ioShare: number | null;
  trueHitRate: number | null;
}

export interface Stream {
  /** Client-side id: events from an older generation's channel are ignored. */
  localId: number;
  jobId: number | null;
  conversationId: number;
  mode: GenerationMode;
  maxTokens: number;
  phase: Phase;
  /** Token deltas of the answer, assembled in order. */
  text: string;
  /** Token deltas of the thinking channel (thinking mode), assembled in order. */
  think: string;
  tokens: number;
  promptTokens: number | null;
  live: LiveStats | null;
  /** `started` arrived: the user message is saved and applied to the conversation. */
  started: boolean;
  userMessage: Message | null;
  /** The saved assistant message from finished, or the saved partial from failed. */
  result: Message | null;
  stopRequested: boolean;
  /** When (ms) prefill began, for its ETA. */
  prefillStartAt: number | null;
}

export interface StreamStart {
  localId: number;
  conversationId: number;
  mode: GenerationMode;
  maxTokens: number;
}

export function newStream(s: StreamStart): Stream {
  return {
    ...s,
    jobId: null,
    phase: { kind: "starting" },
    text: "",
    think: "",
    tokens: 0,
    promptTokens: null,
    live: null,
    started: false,
    userMessage: null,
    result: null,
    stopRequested: false,
    prefillStartAt: null,
  };
}

/** True until finished or failed arrives. */
export function isRunning(s: Stream | null): boolean {
  if (!s) return false;
  const k = s.phase.kind;
  return k !== "done" && k !== "stopped" && k !== "failed";
}

function prefillEta(s: Stream, done: number, total: number, at: number): number | null {
  if (s.prefillStartAt === null || done <= 0 || at <= s.prefillStartAt) return null;
  const msPerToken = (at - s.prefillStartAt) / done;
  return Math.max(0, Math.round((total - done) * msPerToken));
}

function writing(s: Stream, tokens: number): Phase {
  return { kind: "writing", tokens, maxTokens: s.maxTokens, secondsPerToken: s.live?.secondsPerToken ?? null };
}

/** Fold one event into the stream. `at` is the time (ms) the event's batch was delivered. */
export function streamReducer(s: Stream, e: GenerationEvent, at: number): Stream {
  if (s.jobId !== null && e.jobId !== s.jobId) return s;
  const base = s.jobId === null ? { ...s, jobId: e.jobId } : s;
  switch (e.type) {
    case "queued":
      return { ...base, phase: { kind: "queued", position: e.position } };
    case "started":
      return {
        ...base,
        started: true,
        userMessage: e.userMessage,
        prefillStartAt: at,
        phase: { kind: "prefill", done: 0, total: null, etaMs: null },
      };
    case "prefillProgress": {
      const startAt = base.prefillStartAt ?? at;
      const withStart = { ...base, prefillStartAt: startAt, promptTokens: e.total };
      return { ...withStart, phase: { kind: "prefill", done: e.done, total: e.total, etaMs: prefillEta(withStart, e.done, e.total, at) } };
    }
    case "token": {
      const tokens = Math.max(base.tokens, e.index + 1);
      const grown = e.text ? (e.think ? { think: base.think + e.text } : { text: base.text + e.text }) : {};
      return { ...base, ...grown, tokens, phase: writing(base, tokens) };
    }
    case "stats": {
      const live: LiveStats = {
        tokens: e.tokens,
        elapsedMs: e.elapsedMs,
        secondsPerToken: e.secondsPerToken,
        ioShare: e.ioShare,
        trueHitRate: e.trueHitRate,
      };
      const next = { ...base, live };
      return next.phase.kind === "writing" ? { ...next, phase: writing(next, next.tokens) } : next;
    }
    case "finished":
      return {
        ...base,
        result: e.message,
        phase: e.reason === "cancelled" ? { kind: "stopped" } : { kind: "done", reason: e.reason },
      };
    case "failed":
      return { ...base, result: e.message, phase: { kind: "failed", error: e.error } };
    default: {
      const unhandled: never = e;
      return unhandled;
    }
  }
}
