// One saved (or previewed) message: user text or assistant Markdown, the collapsed thinking channel,
// an assistant's tool calls and a tool's result as collapsed blocks, the stats line, and the
// per-message actions (Copy, Edit on user messages, Regenerate on the last reply).
// Owns: the stable selectors `.message[data-role][data-status][data-id]`, `.content`, `.stats`,
// `.tool-call[data-tool]`, `.tool-result`.
// Must not: call the engine; actions come in as callbacks; render tool arguments or results as
// anything but text (a tool's output is never HTML here).
import { memo } from "preact/compat";
import type { Message, ToolCall } from "../generated/ipc";
import { formatCount } from "../state/format";
import { EditBox } from "./EditBox";
import { Markdown } from "./Markdown";
import { PlainText } from "./PlainText";
import { StatsLine } from "./StatsLine";

export interface MessageActions {
  onRegenerate(): void;
  onEdit(messageId: number): void;
  onSaveEdit(messageId: number, text: string): void;
  onCancelEdit(): void;
}

interface Props {
  message: Message;
  /** False for a preview not yet stored: no data-id, no actions. */
  saved: boolean;
  /** Regenerate is offered on this message (the last assistant reply, nothing running). */
  canRegenerate: boolean;
  /** Edit is offered (user message, nothing running). */
  canEdit: boolean;
  editing: boolean;
  actions: MessageActions;
}

const STATUS_LABEL: Record<Message["status"], string | null> = {
  complete: null,
  stopped: "Stopped",
  failed: "Failed: the reply is incomplete",
};

export function Think({ text }: { text: string }) {
  return (
    <details class="think">
      <summary>Thinking · {formatCount(text.length)} characters</summary>
      <div class="think-text">
        <PlainText text={text} />
      </div>
    </details>
  );
}

/** A call's arguments laid out for reading (as sent when they are not JSON). */
export function prettyArguments(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}

function ToolCallBlock({ call }: { call: ToolCall }) {
  return (
    <details class="tool-call" data-tool={call.tool}>
      <summary>
        Calls <code>{call.tool}</code>
        <span class="tool-meta"> · call {call.index}</span>
      </summary>
      <div class="tool-text">
        <PlainText text={prettyArguments(call.arguments)} />
      </div>
    </details>
  );
}

function ToolResultBlock({ m }: { m: Message }) {
  const a = m.toolAnswer;
  return (
    <details class="tool-result" data-status={m.status}>
      <summary>
        {m.status === "complete" ? "Result" : m.status === "stopped" ? "Stopped" : "Error"}
        {a ? <> of <code>{a.tool}</code><span class="tool-meta"> · call {a.index}</span></> : null}
        {a?.server ? <span class="tool-meta"> · {a.server}</span> : null}
        <span class="tool-meta"> · {formatCount(m.content.length)} characters</span>
        {a?.cutFromBytes ? <span class="tool-meta"> · cut from {formatCount(a.cutFromBytes)} bytes</span> : null}
      </summary>
      <div class="tool-text content plain">
        <PlainText text={m.content} />
      </div>
    </details>
  );
}

function copyText(text: string) {
  void navigator.clipboard?.writeText(text).catch(() => undefined);
}

/** Memoized: while a reply streams the list re-renders every frame, but saved messages keep their
 *  object identity, so only the live bubble does work. */
export const MessageView = memo(function MessageView({ message: m, saved, canRegenerate, canEdit, editing, actions }: Props) {
  // A tool message's status is said on its result block.
  const label = m.role === "tool" ? null : STATUS_LABEL[m.status];
  const who = m.role === "user" ? "You" : m.role === "tool" ? "Tool" : "K3";
  return (
    <article
      class={`message ${m.role}`}
      data-role={m.role}
      data-status={m.status}
      data-id={saved ? String(m.id) : undefined}
      aria-label={`${who} said`}
    >
      <header class="message-head">
        <span class="who">{who}</span>
        {label && <span class={`badge ${m.status}`}>{label}</span>}
      </header>
      {m.think && <Think text={m.think} />}
      {editing ? (
        <EditBox
          initial={m.content}
          onSave={(text) => actions.onSaveEdit(m.id, text)}
          onCancel={actions.onCancelEdit}
        />
      ) : m.role === "tool" ? (
        <ToolResultBlock m={m} />
      ) : m.role === "assistant" ? (
        (m.content !== "" || m.toolCalls.length === 0) && <Markdown source={m.content} />
      ) : (
        <div class="content plain">
          <PlainText text={m.content} />
        </div>
      )}
      {m.toolCalls.map((call) => (
        <ToolCallBlock key={call.id} call={call} />
      ))}
      {m.role === "assistant" && m.stats && <StatsLine stats={m.stats} />}
      {m.status === "failed" && m.failure && (
        <p class="failure-reason" data-testid="failure-reason">
          {m.failure}
        </p>
      )}
      {saved && !editing && (
        <div class="message-actions">
          {m.content !== "" && (
            <button type="button" aria-label="Copy message" onClick={() => copyText(m.content)}>
              Copy
            </button>
          )}
          {m.role === "user" && canEdit && (
            <button type="button" aria-label="Edit message" onClick={() => actions.onEdit(m.id)}>
              Edit
            </button>
          )}
          {canRegenerate && (
            <button type="button" aria-label="Regenerate" onClick={actions.onRegenerate}>
              Regenerate
            </button>
          )}
        </div>
      )}
    </article>
  );
});
