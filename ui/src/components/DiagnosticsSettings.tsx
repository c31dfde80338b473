// Settings › Diagnostics: the app's plain-text report (versions, machine, model and plan,
// setup, local API, every environment variable read — no prompts, no secrets) with a Copy
// button for bug reports, and the log viewer. Nothing is sent anywhere: the app has no telemetry.
// The report and the copy are controllers/diagnostics.ts's.
import { useDiagnostics } from "../controllers/diagnostics";
import { LogViewer } from "./LogViewer";

export function DiagnosticsSettings() {
  const { text, status, refresh, copy } = useDiagnostics();
  return (
    <section class="settings-section" aria-labelledby="diagnostics-title" data-testid="diagnostics">
      <h2 id="diagnostics-title">Diagnostics</h2>
      <p class="muted">For a bug report. It never contains your conversations or keys, and the app sends nothing anywhere.</p>
      <textarea class="diagnostics-text" aria-label="Diagnostics report" readOnly rows={16} value={text ?? "Reading…"} />
      <div class="settings-actions">
        <button type="button" class="primary" disabled={text === null} onClick={() => void copy()}>
          Copy diagnostics
        </button>
        <button type="button" onClick={() => void refresh()}>
          Refresh
        </button>
        {status && <span role="status">{status}</span>}
      </div>
      <LogViewer />
    </section>
  );
}
