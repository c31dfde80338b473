// Settings › Diagnostics and Model folder, the controllers: the plain-text report (read and copied
// for a bug report; nothing is sent anywhere), the log's last entries, and the model folder's view
// with "Verify now" (every file hashed again, with progress and Stop).
// Owns: the engine calls of those sections. Must not: render (DiagnosticsSettings.tsx,
// LogViewer.tsx and ModelFolderSettings.tsx draw) or let an engine error escape.
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { LogTail, ModelFolderView, VerifyOutcome, VerifyProgress } from "../generated/ipc";

export function useDiagnostics() {
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
  return { text, status, refresh, copy };
}

/** Entries the log viewer asks for. */
export const LOG_LINES = 500;

export function useLogTail() {
  const [tail, setTail] = useState<LogTail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = () =>
    engine.readLog(LOG_LINES).then(
      (t) => {
        setTail(t);
        setError(null);
      },
      (e) => setError(e.message),
    );
  useEffect(() => void refresh(), []);
  return { tail, error, refresh };
}

export function useModelFolder() {
  const [view, setView] = useState<ModelFolderView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [progress, setProgress] = useState<VerifyProgress | null>(null);
  const [running, setRunning] = useState(false);
  const [outcome, setOutcome] = useState<VerifyOutcome | null>(null);
  useEffect(() => {
    engine.modelFolder().then(setView, (e) => setError(e.message));
  }, []);
  const verify = async () => {
    setRunning(true);
    setOutcome(null);
    setError(null);
    try {
      const r = await engine.verifyModelFolder(setProgress);
      setOutcome(r);
      setView(r.view);
    } catch (e) {
      setError((e as { message: string }).message);
    } finally {
      setRunning(false);
      setProgress(null);
    }
  };
  const stop = () => void engine.stopVerify().catch((e) => setError(engine.toIpcError(e).message));
  return { view, error, progress, running, outcome, verify, stop };
}
