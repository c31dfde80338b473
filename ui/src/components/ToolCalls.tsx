// The calls of the last reply that wait for the user: each shows its tool, its server and its
// arguments (as text), with Allow, Always allow and Deny; the running one shows Stop.
// Owns: the selectors `.pending-call[data-tool][data-call]`, `.tool-loop-note`.
// Must not: run anything itself (controllers/toolLoop.ts decides through the app).
import type { PendingToolCall } from "../generated/ipc";
import type { ToolLoop } from "../state/toolLoop";
import { prettyArguments } from "./MessageView";
import { PlainText } from "./PlainText";

function PendingCall({ call, loop }: { call: PendingToolCall; loop: ToolLoop }) {
  const runs = loop.running === call.callId;
  // A decision waits for the one running, and for the fresh list after it.
  const blocked = loop.running !== null || loop.settling;
  return (
    <div class="pending-call" data-tool={call.tool} data-call={call.callId} aria-label={`Call of ${call.tool}`}>
      <header class="pending-head">
        K3 wants to call <code>{call.tool}</code>
        <span class="tool-meta">
          {call.serverName ? ` on ${call.serverName}` : " — no enabled tool server offers it"}
        </span>
      </header>
      <div class="tool-text">
        <PlainText text={prettyArguments(call.arguments)} />
      </div>
      <div class="pending-actions">
        {runs ? (
          <>
            <span class="running" role="status">Running…</span>
            <button type="button" aria-label="Stop the tool call" onClick={() => void loop.stop()}>
              Stop
            </button>
          </>
        ) : (
          <>
            <button
              type="button"
              class="primary"
              aria-label={`Allow ${call.tool}`}
              disabled={blocked || !call.serverId}
              onClick={() => void loop.decide(call.callId, "allow")}
            >
              Allow
            </button>
            <button
              type="button"
              aria-label={`Always allow ${call.tool}`}
              title={`Run ${call.tool} on ${call.serverName ?? "its server"} without asking from now on (Settings › Tools takes it back)`}
              disabled={blocked || !call.serverId}
              onClick={() => void loop.decide(call.callId, "alwaysAllow")}
            >
              Always allow
            </button>
            <button type="button" aria-label={`Deny ${call.tool}`} disabled={blocked} onClick={() => void loop.decide(call.callId, "deny")}>
              Deny
            </button>
          </>
        )}
      </div>
    </div>
  );
}

export function ToolCalls({ loop }: { loop: ToolLoop }) {
  if (loop.pending.length === 0 && !loop.note) return null;
  return (
    <section class="tool-calls-pending" aria-label="Tool calls waiting for you">
      {loop.pending.map((call) => (
        <PendingCall key={call.callId} call={call} loop={loop} />
      ))}
      {loop.note && (
        <p class="tool-loop-note" role="status">
          {loop.note}
        </p>
      )}
    </section>
  );
}
