// Conversation list: New chat, open, export (Markdown / JSON through the native save dialog) and
// delete with an inline confirmation (no window.confirm: not every webview shows one).
// Owns: `[data-testid=conversation-list]` with one `li[data-id]` per conversation, newest first.
import { useState } from "preact/hooks";
import type { ConversationSummary, ExportFormat } from "../generated/ipc";

interface Props {
  conversations: ConversationSummary[];
  currentId: number | null;
  /** Conversation with a generation running: not deletable meanwhile. */
  busyId: number | null;
  onNew(): void;
  onSelect(id: number): void;
  onDelete(id: number): void;
  onExport(id: number, format: ExportFormat): void;
}

export function Sidebar({ conversations, currentId, busyId, onNew, onSelect, onDelete, onExport }: Props) {
  const [confirming, setConfirming] = useState<number | null>(null);
  return (
    <nav class="sidebar" aria-label="Conversations">
      <button type="button" class="primary new-chat" aria-label="New chat" title="New chat (Ctrl+N)" onClick={onNew}>
        + New chat
      </button>
      <ul data-testid="conversation-list" class="conversation-list">
        {conversations.map((c) => {
          const current = c.id === currentId;
          return (
            <li key={c.id} data-id={String(c.id)} class={current ? "current" : undefined} aria-current={current ? "true" : undefined}>
              <button type="button" class="conv-open" aria-label={`Open conversation: ${c.title}`} onClick={() => onSelect(c.id)}>
                <span class="conv-title">{c.title}</span>
                <small class="conv-meta">
                  {c.messageCount} messages
                  {c.backend && (
                    <span class="remote-badge" data-testid="remote-badge" title="Answered by a remote backend: its prompts leave this machine">
                      {" "}· remote
                    </span>
                  )}
                </small>
              </button>
              {confirming === c.id ? (
                <div class="conv-actions confirm" role="group" aria-label="Delete this chat?">
                  <span>Delete this chat?</span>
                  <button
                    type="button"
                    class="danger"
                    aria-label="Confirm delete"
                    onClick={() => {
                      setConfirming(null);
                      onDelete(c.id);
                    }}
                  >
                    Delete
                  </button>
                  <button type="button" aria-label="Cancel delete" onClick={() => setConfirming(null)}>
                    Cancel
                  </button>
                </div>
              ) : (
                <div class="conv-actions">
                  <button type="button" aria-label="Export as Markdown" title="Export as Markdown" onClick={() => onExport(c.id, "markdown")}>
                    MD
                  </button>
                  <button type="button" aria-label="Export as JSON" title="Export as JSON" onClick={() => onExport(c.id, "json")}>
                    JSON
                  </button>
                  <button
                    type="button"
                    aria-label="Delete conversation"
                    title="Delete conversation"
                    disabled={busyId === c.id}
                    onClick={() => setConfirming(c.id)}
                  >
                    Delete
                  </button>
                </div>
              )}
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
