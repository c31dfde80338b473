// The error region (`[role=alert]`, present only while there is an error: IpcError message, code and
// details, dismissable) and a polite status line for quiet confirmations ("Exported to …").
// Also the phase strip `[data-testid=phase]` and the history's startup notice
// `[data-testid=history-notice]` (a damaged file set aside, a newer app's file left alone).
import type { HistoryNotice, IpcError } from "../generated/ipc";
import { phaseText } from "../state/phase";
import type { Stream } from "../state/stream";

export function ErrorRegion({ error, onDismiss }: { error: IpcError | null; onDismiss(): void }) {
  if (!error) return null;
  return (
    <div class="alert" role="alert">
      <p>
        <strong>{error.message}</strong> <code class="error-code">{error.code}</code>
      </p>
      {error.details && (
        <details>
          <summary>Details</summary>
          <pre>{error.details}</pre>
        </details>
      )}
      <button type="button" aria-label="Dismiss error" onClick={onDismiss}>
        Dismiss
      </button>
    </div>
  );
}

/** The history's startup notice: the message, every file set aside (selectable, to find or copy),
 *  and a Dismiss button only while chats are saved — a "not saved" session keeps the warning up. */
export function HistoryBanner({ notice, onDismiss }: { notice: HistoryNotice | null; onDismiss(): void }) {
  if (!notice) return null;
  return (
    <div class="alert history-notice" role="alert" data-testid="history-notice" data-kind={notice.kind}>
      <p>
        <strong>{notice.saved ? "Chat history" : "Chat history not saved"}</strong> {notice.message}
      </p>
      {notice.setAside.length > 0 && (
        <ul class="set-aside" aria-label="Files set aside">
          {notice.setAside.map((p) => (
            <li key={p}>
              <code>{p}</code>
            </li>
          ))}
        </ul>
      )}
      {notice.saved && (
        <button type="button" aria-label="Dismiss history notice" onClick={onDismiss}>
          Dismiss
        </button>
      )}
    </div>
  );
}

export function StatusLine({ notice, onDismiss }: { notice: string | null; onDismiss(): void }) {
  return (
    <div class="status-line" role="status" aria-live="polite">
      {notice && (
        <>
          <span>{notice}</span>
          <button type="button" aria-label="Dismiss notice" onClick={onDismiss}>
            ×
          </button>
        </>
      )}
    </div>
  );
}

/** `idle` is shown when nothing has been generated yet ("Ready", "Loading model…"). */
export function PhaseStrip({ stream, currentId, idle }: { stream: Stream | null; currentId: number | null; idle: string }) {
  const kind = stream ? stream.phase.kind : "idle";
  const elsewhere = stream && stream.conversationId !== currentId ? "In another chat: " : "";
  return (
    <div class="phase" data-testid="phase" data-phase={kind} aria-live="polite">
      {stream ? elsewhere + phaseText(stream.phase) : idle}
    </div>
  );
}
