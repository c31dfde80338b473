// Settings › Local API: an OpenAI-compatible server on this computer over the same engine as the
// chat (off by default, port 8000, optional key, LAN only by explicit opt-in with a key and a warning).
// Owns: drawing the form, the state line, the problem with its way out ("Use port 8001") and the
// request log; polling the status every 2 s while shown. Checks and words are state/localApi.ts's.
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { ApiStatus } from "../generated/ipc";
import { type ApiForm, formChanged, parseApiForm, randomKey, statusLine, toApiForm } from "../state/localApi";

const POLL_MS = 2000;
const LOG_SHOWN = 20;

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

export function LocalApiSettings() {
  const [status, setStatus] = useApiStatus();
  const [form, setForm] = useState<ApiForm | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [working, setWorking] = useState(false);
  useEffect(() => {
    if (status && form === null) setForm(toApiForm(status.settings));
  }, [status]);
  if (!status || !form) return <p class="muted">Reading the local API's state…</p>;
  const set = (patch: Partial<ApiForm>) => setForm({ ...form, ...patch });

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
  const toggle = () => (status.running ? void act(engine.apiStop) : start(form));
  const problem = status.problem;
  const changed = status.running && formChanged(form, status.settings);

  return (
    <section class="settings-section" aria-labelledby="local-api-title">
      <h2 id="local-api-title">Local API</h2>
      <p class="muted">
        An OpenAI-compatible server on this computer, so editors, agents and scripts can use the model. Their requests and
        your chats share one engine and take turns.
      </p>
      <label class="switch">
        <input type="checkbox" role="switch" data-testid="api-toggle" checked={status.running} disabled={working} onChange={toggle} />
        Serve the local API
      </label>
      <p class={`api-state ${status.running ? "on" : problem ? "problem" : ""}`} data-testid="api-state" role="status">
        {statusLine(status)}
      </p>
      {problem?.kind === "portTaken" && problem.nextFree !== null && (
        <button type="button" data-testid="api-use-free-port" onClick={() => start({ ...form, port: String(problem.nextFree) })}>
          Use port {problem.nextFree}
        </button>
      )}
      {message && <p class="field-error" role="alert">{message}</p>}
      <div class="settings-grid">
        <label>
          Port
          <input type="text" inputMode="numeric" data-testid="api-port" value={form.port} onInput={(e) => set({ port: e.currentTarget.value })} />
        </label>
        <label>
          API key (optional on this computer)
          <span class="row">
            <input type="text" spellcheck={false} autoComplete="off" data-testid="api-key" value={form.apiKey} placeholder="none: any key is accepted" onInput={(e) => set({ apiKey: e.currentTarget.value })} />
            <button type="button" onClick={() => set({ apiKey: randomKey() })}>
              Generate
            </button>
          </span>
        </label>
        <label class="switch">
          <input type="checkbox" checked={form.lan} onChange={(e) => set({ lan: e.currentTarget.checked })} />
          Serve other devices on my network
        </label>
        {form.lan && (
          <>
            <p class="warning" role="note">
              Anyone on your network who has the key can use the model and read what it writes. Only do this on a network you
              trust; the key is required.
            </p>
            <label>
              This computer's address on the network
              <input type="text" value={form.lanAddress} placeholder="192.168.1.20" onInput={(e) => set({ lanAddress: e.currentTarget.value })} />
            </label>
          </>
        )}
      </div>
      {changed && (
        <button type="button" class="primary" disabled={working} onClick={() => start(form)}>
          Restart with these settings
        </button>
      )}
      {status.running && status.baseUrl && <Example baseUrl={status.baseUrl} hasKey={status.settings.apiKey !== ""} />}
      <RequestLog status={status} />
    </section>
  );
}

function Example({ baseUrl, hasKey }: { baseUrl: string; hasKey: boolean }) {
  const auth = hasKey ? ` -H "Authorization: Bearer $K3_API_KEY"` : "";
  return (
    <details class="api-example">
      <summary>How to connect a client</summary>
      <p class="muted">Base URL {baseUrl}; the model id is listed at /v1/models.</p>
      <pre>{`curl ${baseUrl}/models${auth}`}</pre>
    </details>
  );
}

function RequestLog({ status }: { status: ApiStatus }) {
  const lines = status.log.slice(-LOG_SHOWN).reverse();
  if (lines.length === 0) return <p class="muted">No requests yet.</p>;
  return (
    <table class="api-log" data-testid="api-log">
      <caption>Recent requests (newest first)</caption>
      <thead>
        <tr>
          <th>Time</th>
          <th>Request</th>
          <th>Status</th>
          <th>Answered in</th>
          <th>From</th>
        </tr>
      </thead>
      <tbody>
        {lines.map((l) => (
          <tr key={`${l.atMs}-${l.path}-${l.peer}`} class={l.status >= 400 ? "refused" : ""}>
            <td>{new Date(l.atMs).toLocaleTimeString()}</td>
            <td>
              {l.method} {l.path}
            </td>
            <td>{l.status}</td>
            <td>{l.seconds < 0.001 ? "< 1 ms" : l.seconds < 1 ? `${(l.seconds * 1000).toFixed(0)} ms` : `${l.seconds.toFixed(2)} s`}</td>
            <td>{l.peer ?? "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
