// The Queue tab, the controller: the queue's state (polled every second while shown, every half
// second while a prompt runs), adding prompts typed or imported (JSONL, CSV, lines), pause, resume,
// cancel, clear and export.
// Owns: the tab's engine calls. Must not: render (components/QueueView.tsx draws), compute words
// (state/queue.ts), or let an engine error escape (it becomes `message`). The queue itself
// (journal, seeds, ETA) lives in the app core.
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { QueueExportFormat, QueueState } from "../generated/ipc";
import { importFormatOf } from "../state/queue";

const POLL_MS = 1000;
const POLL_RUNNING_MS = 500;

function useQueueState() {
  const [queue, setQueue] = useState<QueueState | null>(null);
  const running = (queue?.running ?? 0) > 0;
  useEffect(() => {
    let live = true;
    const poll = () => void engine.queueState().then((q) => live && setQueue(q)).catch(() => undefined);
    poll();
    const timer = setInterval(() => document.visibilityState === "visible" && poll(), running ? POLL_RUNNING_MS : POLL_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [running]);
  return [queue, setQueue] as const;
}

export interface Queue {
  queue: QueueState | null;
  /** The prompts being typed, one per line. */
  typed: string;
  message: string | null;
  working: boolean;
  setTyped(text: string): void;
  addTyped(): void;
  importFile(f: File): Promise<void>;
  exportAs(format: QueueExportFormat): void;
  pause(): void;
  resume(): void;
  cancelAll(): void;
  cancel(id: number): void;
  clearFinished(): void;
}

export function useQueue(): Queue {
  const [queue, setQueue] = useQueueState();
  const [typed, setTyped] = useState("");
  const [message, setMessage] = useState<string | null>(null);
  const [working, setWorking] = useState(false);
  const act = async (f: () => Promise<QueueState | string | null>, done?: (r: string | null) => void) => {
    setWorking(true);
    setMessage(null);
    try {
      const r = await f();
      if (r !== null && typeof r === "object") setQueue(r);
      done?.(typeof r === "string" ? r : null);
    } catch (e) {
      setMessage(engine.toIpcError(e).message);
    } finally {
      setWorking(false);
    }
  };
  return {
    queue,
    typed,
    message,
    working,
    setTyped,
    addTyped: () => void act(() => engine.queueAdd(typed, "lines"), () => setTyped("")),
    importFile: async (f: File) => {
      const format = importFormatOf(f.name);
      if (format === null) return setMessage(`${f.name}: import a .jsonl, .csv or .txt file (one prompt per line).`);
      const text = await f.text();
      void act(() => engine.queueAdd(text, format));
    },
    exportAs: (format) => void act(() => engine.queueSaveExport(format), (path) => path && setMessage(`Saved the answers to ${path}`)),
    pause: () => void act(engine.queuePause),
    resume: () => void act(engine.queueResume),
    cancelAll: () => void act(engine.queueCancelAll),
    cancel: (id) => void act(() => engine.queueCancel(id)),
    clearFinished: () => void act(engine.queueClearFinished),
  };
}
