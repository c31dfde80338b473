// The tool loop of the open conversation, the pure half: what the loop does once no call waits
// (reply to the results, or why it waits), and the loop's shape. The controller that asks which
// calls wait, runs the always-allowed ones and starts the next reply is controllers/toolLoop.ts.
// Tested in toolLoop.test.ts.
import type { Message, PendingToolCall, ToolDecision } from "../generated/ipc";

/** Replies one user message may lead to before the loop waits for the user. */
export const MAX_LOOP_STEPS = 16;

export interface ToolLoop {
  pending: PendingToolCall[];
  /** The call running now. */
  running: string | null;
  /** Why the loop waits when it cannot go on by itself. */
  note: string | null;
  /** The conversation is being read again after a decision: the calls shown are the last list
   * fetched, still waiting, and decisions wait for the fresh list. */
  settling: boolean;
  decide(callId: string, decision: ToolDecision): Promise<void>;
  stop(): Promise<void>;
}

/** What the loop does next with `messages` once no call waits: reply to the results, or why not. */
export function nextStep(messages: Message[]): { kind: "continue" } | { kind: "wait"; note: string | null } {
  const last = messages[messages.length - 1];
  if (!last || last.role !== "tool") return { kind: "wait", note: null };
  let i = messages.length - 1;
  while (i >= 0 && messages[i]!.role === "tool") i--;
  const results = messages.slice(i + 1);
  if (results.some((m) => m.status === "stopped")) return { kind: "wait", note: "The tool call was stopped; send a message to go on." };
  const sinceUser = messages.slice(messages.map((m) => m.role).lastIndexOf("user") + 1);
  const steps = sinceUser.filter((m) => m.role === "assistant").length;
  if (steps >= MAX_LOOP_STEPS) {
    return { kind: "wait", note: `K3 has made ${steps} tool-calling replies to your message; send a message to let it go on.` };
  }
  return { kind: "continue" };
}

/** Whether the calls of `pending` (one assistant message's) still wait in `messages`: that message
 * is there and nothing but tool results follows it. While the conversation is read again after a
 * decision, such calls stay on screen instead of blinking out (found by the e2e tools journey on
 * the release build, whose faster reload let the journey see no card between two denials). */
export function stillWaiting(messages: Message[], pending: PendingToolCall[]): boolean {
  const owner = pending[0]?.messageId;
  if (owner === undefined) return false;
  const at = messages.findIndex((m) => m.id === owner);
  return at >= 0 && messages.slice(at + 1).every((m) => m.role === "tool");
}
