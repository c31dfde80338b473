// Settings › Local API, the controller: the server's status (polled every 2 s while the section is
// shown), the form the user edits, and the actions that start, stop and restart the server.
// Owns: every engine call of the section and the state between them; the checks and words are
// state/localApi.ts's, the drawing LocalApiSettings.tsx's.
// Must not: render, or let an engine error escape (it becomes `message`).
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { ApiStatus } from "../generated/ipc";
import { type ApiForm, formChanged, parseApiForm, randomKey, toApiForm } from "../state/localApi";

const POLL_MS = 2000;

export interface LocalApi {
  /** Null until the first status arrives. */
  status: ApiStatus | null;
  form: ApiForm | null;
  /** The last problem in words (a refused form or a failed call). */
  message: string | null;
  /** A start or stop is running. */
  working: boolean;
  /** The server runs with settings other than the form's ("Restart with these settings"). */
  changed: boolean;
  edit(patch: Partial<ApiForm>): void;
  /** Starts the server when it is off (with the form), stops it when it runs. */
  toggle(): void;
  /** (Re)starts with the form as it is. */
  restart(): void;
  /** Starts on `port`, the free one the server named. */
  startOnPort(port: number): void;
  generateKey(): void;
}

function useApiStatus() {
  const [status, setStatus] = useState<ApiStatus | null>(null);
  useEffect(() => {
    let live = true;
    const poll = () => void engine.apiStatus().then((s) => live && setStatus(s)).catch(() => undefined);
    poll();
    const timer = setInterval(poll, POLL_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  return [status, setStatus] as const;
}

export function useLocalApi(): LocalApi {
  const [status, setStatus] = useApiStatus();
  const [form, setForm] = useState<ApiForm | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [working, setWorking] = useState(false);
  useEffect(() => {
    if (status && form === null) setForm(toApiForm(status.settings));
  }, [status]);

  const act = async (f: () => Promise<ApiStatus>) => {
    setWorking(true);
    setMessage(null);
    try {
      const s = await f();
      setStatus(s);
      setForm(toApiForm(s.settings));
    } catch (e) {
      setMessage(engine.toIpcError(e).message);
    } finally {
      setWorking(false);
    }
  };
  const start = (f: ApiForm) => {
    const parsed = parseApiForm(f);
    if (typeof parsed === "string") return setMessage(parsed);
    void act(() => engine.apiStart(parsed));
  };
  const edit = (patch: Partial<ApiForm>) => form && setForm({ ...form, ...patch });
  return {
    status,
    form,
    message,
    working,
    changed: !!status && !!form && status.running && formChanged(form, status.settings),
    edit,
    toggle: () => {
      if (!status || !form) return;
      if (status.running) void act(engine.apiStop);
      else start(form);
    },
    restart: () => form && start(form),
    startOnPort: (port) => form && start({ ...form, port: String(port) }),
    generateKey: () => edit({ apiKey: randomKey() }),
  };
}
