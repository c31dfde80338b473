// Settings › Diagnostics' log viewer: the last entries of the app's log file (models opened, plans
// applied, replies finished with their figures, the local API, downloads), newest at the bottom,
// filtered by level. The log holds no prompt or reply text (src-tauri/src/logging.rs). Reading it is
// controllers/diagnostics.ts's; the filter is this view's.
import { useState } from "preact/hooks";
import { useLogTail } from "../controllers/diagnostics";
import type { LogLine } from "../generated/ipc";

export type LevelFilter = "all" | "warnings";

/** The entries `filter` keeps. */
export function filterLines(lines: LogLine[], filter: LevelFilter): LogLine[] {
  return filter === "all" ? lines : lines.filter((l) => l.level === "WARN" || l.level === "ERROR");
}

export function LogViewer() {
  const { tail, error, refresh } = useLogTail();
  const [filter, setFilter] = useState<LevelFilter>("all");
  const shown = tail ? filterLines(tail.lines, filter) : [];
  return (
    <div class="log-viewer" data-testid="log-viewer">
      <h3>Log</h3>
      <div class="settings-actions">
        <label>
          Show{" "}
          <select aria-label="Log level" value={filter} onChange={(e) => setFilter(e.currentTarget.value as LevelFilter)}>
            <option value="all">everything</option>
            <option value="warnings">warnings and errors</option>
          </select>
        </label>
        <button type="button" onClick={() => void refresh()}>
          Refresh log
        </button>
        {tail && <code class="muted">{tail.path}</code>}
      </div>
      {error && <p role="alert">{error}</p>}
      {tail && (
        <div class="log-lines" role="log" aria-label="App log" tabIndex={0}>
          {tail.truncated && <p class="muted">Older entries are in the file.</p>}
          {shown.length === 0 && <p class="muted">{tail.lines.length === 0 ? "Nothing logged yet." : "No warnings or errors."}</p>}
          {shown.map((l, i) => (
            <div key={i} class={`log-line level-${l.level.toLowerCase()}`}>
              <span class="log-time">{l.time}</span> <span class="log-level">{l.level}</span> <span class="log-source">{l.source}</span>{" "}
              <span class="log-message">{l.message}</span>
            </div>
          ))}
        </div>
      )}
    </div>
  );
}
