// The tool loop of the open conversation, the controller: the calls of its last reply that wait for the user, the
// one running, and the next step once each has its result.
// Owns: asking which calls wait (after every change to the conversation's last message), running
// the ones Settings › Tools always allows without asking, and starting the reply to the results
// once none waits, unless a result was stopped, the last reply was stopped, or the loop has made
// MAX_LOOP_STEPS replies since the user's message.
// Must not: run a call the user has not allowed: "auto" is refused by the app for a tool that is
// not always allowed, and every other decision comes from a click.
// Easy to break: the pending list belongs to one last message (`forMessage`); acting on a list
// fetched for an older one would decide a call twice.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { PendingToolCall, ToolDecision } from "../generated/ipc";
import type { ChatState } from "../state/chat";
import { isRunning } from "../state/stream";
import { nextStep, stillWaiting, type ToolLoop } from "../state/toolLoop";
import type { ChatActions } from "./chat";

export function useToolLoop(state: ChatState, actions: ChatActions): ToolLoop {
  const conv = state.current;
  const busy = isRunning(state.stream);
  const last = conv?.messages[conv.messages.length - 1] ?? null;
  const lastKey = conv && last ? `${conv.id}:${last.id}:${last.status}` : null;
  const [fetched, setFetched] = useState<{ forMessage: string | null; pending: PendingToolCall[] }>({ forMessage: null, pending: [] });
  const [running, setRunning] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    // A new last message starts afresh: an earlier refusal no longer holds the loop.
    setError(null);
    if (!conv || busy || !last || last.role === "user" || last.status === "stopped" && last.role === "assistant") {
      setFetched({ forMessage: lastKey, pending: [] });
      return;
    }
    let live = true;
    engine
      .pendingToolCalls(conv.id)
      .then((pending) => live && setFetched({ forMessage: lastKey, pending }))
      .catch((e) => live && setError(engine.toIpcError(e).message));
    return () => {
      live = false;
    };
  }, [lastKey, busy]);

  const current = fetched.forMessage === lastKey && !busy;
  // Between a decision and the fresh list, the calls still waiting stay shown (and undecidable).
  const settling = !current && !busy && !error && !!conv && stillWaiting(conv.messages, fetched.pending);
  const settlingNow = useRef(settling);
  settlingNow.current = settling;
  const pending = current || settling ? fetched.pending : [];

  const decide = useCallback(
    async (callId: string, decision: ToolDecision) => {
      if (!conv || running || settlingNow.current) return;
      setRunning(callId);
      setError(null);
      try {
        await engine.decideToolCall(conv.id, callId, decision);
      } catch (e) {
        setError(engine.toIpcError(e).message);
      }
      // The decided call leaves the list at once, and nothing else is decided until the
      // conversation is read again (with its result) and its calls asked for anew.
      setFetched((f) => ({ ...f, pending: f.pending.filter((p) => p.callId !== callId) }));
      await actions.reload();
      setRunning(null);
    },
    [conv?.id, running, actions],
  );

  const step = conv && current && pending.length === 0 ? nextStep(conv.messages) : null;
  useEffect(() => {
    if (!current || running || error) return;
    const auto = pending.find((p) => p.alwaysAllowed);
    if (auto) void decide(auto.callId, "auto");
    else if (step?.kind === "continue") void actions.continueReply();
  }, [current, running, error, pending, step?.kind]);

  const stop = useCallback(async () => {
    if (!conv) return;
    try {
      await engine.stopToolCall(conv.id);
    } catch (e) {
      setError(engine.toIpcError(e).message);
    }
  }, [conv?.id]);

  const note = error ?? (step?.kind === "wait" ? step.note : null);
  return { pending, running, note, settling, decide, stop };
}
