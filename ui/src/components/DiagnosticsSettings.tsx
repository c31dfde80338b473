// Settings › Diagnostics: the app's plain-text report (versions, machine, model and plan,
// setup, local API, every environment variable read — no prompts, no secrets) with a Copy
// button for bug reports, and the log viewer. Nothing is sent anywhere: the app has no telemetry.
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import { LogViewer } from "./LogViewer";

export function DiagnosticsSettings() {
  const [text, setText] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const refresh = () => engine.diagnostics().then(setText, (e) => setStatus(e.message));
  useEffect(() => void refresh(), []);
  const copy = async () => {
    if (text === null) return;
    try {
      await navigator.clipboard.writeText(text);
      setStatus("Copied. It holds no prompt, reply or key.");
    } catch {
      setStatus("The clipboard refused: select the text and copy it.");
    }
  };
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
