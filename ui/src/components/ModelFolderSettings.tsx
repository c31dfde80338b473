// Settings › Model folder: the model in use (path, repository and commit, verified files,
// packed trunk), "Verify now" (every file hashed again against its pinned hash, with progress
// and Stop) and "Use another folder…". The view and the calls are controllers/diagnostics.ts's.
import { useModelFolder } from "../controllers/diagnostics";
import { formatGB } from "../state/format";

export function ModelFolderSettings({ onOpenFolder }: { onOpenFolder?(): void }) {
  const { view, error, progress, running, outcome, verify, stop } = useModelFolder();
  if (!view) return <section class="settings-section"><h2>Model folder</h2><p>{error ?? "Reading…"}</p></section>;
  return (
    <section class="settings-section" aria-labelledby="model-folder-title" data-testid="model-folder">
      <h2 id="model-folder-title">Model folder</h2>
      <dl class="facts">
        <dt>Model</dt>
        <dd>{view.name}</dd>
        <dt>Folder</dt>
        <dd><code>{view.path}</code></dd>
        <dt>Packed trunk</dt>
        <dd>{view.trunk ? <code>{view.trunk}</code> : "none (the trunk stays in RAM)"}</dd>
        {view.commit && (
          <>
            <dt>Repository</dt>
            <dd>{view.repo} at <code>{view.commit.slice(0, 12)}</code></dd>
            <dt>Verified</dt>
            <dd data-testid="verified-files">
              {view.verifiedFiles} of {view.files} files ({formatGB(view.bytes)}) match their pinned hashes
            </dd>
          </>
        )}
      </dl>
      {view.note && <p class="muted">{view.note}</p>}
      <div class="settings-actions">
        <button type="button" class="primary" disabled={running || !view.commit} onClick={() => void verify()}>
          Verify now
        </button>
        {running && (
          <button type="button" onClick={stop}>
            Stop
          </button>
        )}
        {onOpenFolder && (
          <button type="button" onClick={onOpenFolder}>
            Use another folder…
          </button>
        )}
      </div>
      {progress && (
        <div class="bar" role="progressbar" aria-valuemin={0} aria-valuemax={progress.totalBytes} aria-valuenow={progress.doneBytes}>
          <div style={{ width: `${progress.totalBytes ? (progress.doneBytes / progress.totalBytes) * 100 : 0}%` }} />
          <span>
            {formatGB(progress.doneBytes)} of {formatGB(progress.totalBytes)} hashed · {progress.file}
          </span>
        </div>
      )}
      {outcome && (
        <p role="status" data-testid="verify-outcome">
          {outcome.bad.length === 0
            ? `All ${outcome.files} files (${formatGB(outcome.bytes)}) match their pinned hashes (${outcome.seconds.toFixed(1)} s).`
            : `${outcome.bad.length} of ${outcome.files} files do not match: ${outcome.bad.join("; ")}`}
        </p>
      )}
      {error && <p role="alert">{error}</p>}
    </section>
  );
}
