// The Queue tab: prompts typed or imported (JSONL, CSV) answered one after another on this computer's
// model, overnight if need be. Owns: drawing the add box, the controls (pause/resume, cancel all,
// clear finished, export), the banners of a stopped queue, and one row per prompt with its progress
// and answer. Polling and the actions are controllers/queue.ts's, the words state/queue.ts's; the
// queue itself (journal, seeds, ETA) lives in the app core.
import { useRef } from "preact/hooks";
import { useQueue } from "../controllers/queue";
import type { QueueEntry } from "../generated/ipc";
import { etaText, hasFinished, progressOf, progressText, stoppedText, summaryText } from "../state/queue";

export function QueueView() {
  const q = useQueue();
  const { queue, typed, message, working, setTyped } = q;
  const file = useRef<HTMLInputElement>(null);
  if (!queue) return <p class="muted">Reading the queue…</p>;
  const { addTyped, importFile, exportAs } = q;
  const stopped = stoppedText(queue);
  const eta = etaText(queue);
  const canResume = queue.paused || queue.halted !== null;

  return (
    <section class="queue" aria-labelledby="queue-title" data-testid="queue-view">
      <h2 id="queue-title">Queue</h2>
      <p class="muted">
        Prompts answered one after another on this computer's model, with the new-chat settings (Settings › New chats). The
        queue is saved as it goes: after a restart it carries on where it was, and an answered prompt is never run again.
      </p>
      {queue.unavailable === null && (
        <div class="queue-add">
          <label for="queue-typed">Prompts, one per line</label>
          <textarea id="queue-typed" data-testid="queue-typed" rows={2} value={typed} placeholder="Summarise the attached meeting notes…" onInput={(e) => setTyped(e.currentTarget.value)} />
          <div class="queue-add-actions">
            <button type="button" class="primary" data-testid="queue-add" disabled={working || typed.trim() === ""} onClick={addTyped}>
              Add to queue
            </button>
            <button type="button" onClick={() => file.current?.click()} disabled={working}>
              Import JSONL or CSV…
            </button>
            <input
              ref={file}
              type="file"
              hidden
              data-testid="queue-file"
              accept=".jsonl,.ndjson,.csv,.txt"
              onChange={(e) => {
                const f = e.currentTarget.files?.[0];
                e.currentTarget.value = "";
                if (f) void importFile(f);
              }}
            />
          </div>
        </div>
      )}
      {message && (
        <p class="queue-message" role="status" data-testid="queue-message">
          {message}
        </p>
      )}
      {stopped && (
        <div class="banner queue-stopped" role="alert" data-testid="queue-stopped">
          {stopped}
        </div>
      )}
      {queue.awakeRefused && queue.running > 0 && (
        <p class="muted" data-testid="queue-awake" title={queue.awakeRefused}>
          This computer may sleep while the queue runs: the system did not agree to keep it awake. The queue carries on when it
          wakes.
        </p>
      )}
      <div class="queue-bar">
        <span class="queue-summary" data-testid="queue-summary" role="status">
          {summaryText(queue)}
          {eta && <span data-testid="queue-eta"> · {eta}</span>}
          {queue.width > 1 && queue.running > 0 && <span> · {queue.width} at once</span>}
        </span>
        <span class="queue-controls">
          {canResume ? (
            <button type="button" data-testid="queue-resume" disabled={working} onClick={q.resume}>
              Resume
            </button>
          ) : (
            <button type="button" data-testid="queue-pause" disabled={working || queue.waiting + queue.running === 0} onClick={q.pause}>
              Pause
            </button>
          )}
          <button type="button" data-testid="queue-cancel-all" disabled={working || queue.waiting + queue.running === 0} onClick={q.cancelAll}>
            Cancel all
          </button>
          <button type="button" data-testid="queue-clear" disabled={working || !hasFinished(queue)} onClick={q.clearFinished}>
            Clear finished
          </button>
          <button type="button" data-testid="queue-export-jsonl" disabled={working || !hasFinished(queue)} onClick={() => exportAs("jsonl")}>
            Export JSONL
          </button>
          <button type="button" data-testid="queue-export-csv" disabled={working || !hasFinished(queue)} onClick={() => exportAs("csv")}>
            Export CSV
          </button>
        </span>
      </div>
      <ol class="queue-items" data-testid="queue-items">
        {queue.items.map((e) => (
          <QueueRow key={e.id} entry={e} onCancel={() => q.cancel(e.id)} />
        ))}
      </ol>
    </section>
  );
}

function QueueRow({ entry, onCancel }: { entry: QueueEntry; onCancel(): void }) {
  const live = entry.status === "waiting" || entry.status === "running";
  return (
    <li class={`queue-item ${entry.status}`} data-id={String(entry.id)} data-status={entry.status}>
      <div class="queue-item-head">
        <span class="queue-label">{entry.label}</span>
        <span class="queue-prompt" title={entry.prompt}>
          {entry.prompt}
        </span>
        <span class={`queue-status ${entry.status}`}>{entry.status === "done" ? "answered" : entry.status}</span>
        {live && (
          <button type="button" class="queue-cancel" aria-label={`Cancel prompt ${entry.label}`} onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
      {entry.status === "running" && <progress class="queue-progress" value={progressOf(entry)} max={1} />}
      <div class="queue-item-progress" data-testid="queue-item-progress">
        {progressText(entry)}
      </div>
      {entry.text && (
        <details class="queue-answer">
          <summary>Answer</summary>
          <pre class="queue-answer-text" data-testid="queue-answer">
            {entry.text}
          </pre>
        </details>
      )}
    </li>
  );
}
