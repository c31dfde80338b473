// Settings › Local API: an OpenAI-compatible server on this computer over the same engine as the
// chat (off by default, port 8000, optional key, LAN only by explicit opt-in with a key and a warning).
// Owns: drawing the form, the state line, the problem with its way out ("Use port 8001") and the
// request log. The status, the form and the actions are controllers/localApi.ts's; checks and words
// state/localApi.ts's.
import { useLocalApi } from "../controllers/localApi";
import type { ApiStatus } from "../generated/ipc";
import { statusLine } from "../state/localApi";

const LOG_SHOWN = 20;

export function LocalApiSettings() {
  const api = useLocalApi();
  const { status, form, message, working, changed } = api;
  if (!status || !form) return <p class="muted">Reading the local API's state…</p>;
  const problem = status.problem;

  return (
    <section class="settings-section" aria-labelledby="local-api-title">
      <h2 id="local-api-title">Local API</h2>
      <p class="muted">
        An OpenAI-compatible server on this computer, so editors, agents and scripts can use the model. Their requests and
        your chats share one engine and take turns.
      </p>
      <label class="switch">
        <input type="checkbox" role="switch" data-testid="api-toggle" checked={status.running} disabled={working} onChange={api.toggle} />
        Serve the local API
      </label>
      <p class={`api-state ${status.running ? "on" : problem ? "problem" : ""}`} data-testid="api-state" role="status">
        {statusLine(status)}
      </p>
      {problem?.kind === "portTaken" && problem.nextFree !== null && (
        <button type="button" data-testid="api-use-free-port" onClick={() => problem.nextFree !== null && api.startOnPort(problem.nextFree)}>
          Use port {problem.nextFree}
        </button>
      )}
      {message && <p class="field-error" role="alert">{message}</p>}
      <div class="settings-grid">
        <label>
          Port
          <input type="text" inputMode="numeric" data-testid="api-port" value={form.port} onInput={(e) => api.edit({ port: e.currentTarget.value })} />
        </label>
        <label>
          API key (optional on this computer)
          <span class="row">
            <input type="text" spellcheck={false} autoComplete="off" data-testid="api-key" value={form.apiKey} placeholder="none: any key is accepted" onInput={(e) => api.edit({ apiKey: e.currentTarget.value })} />
            <button type="button" onClick={api.generateKey}>
              Generate
            </button>
          </span>
        </label>
        <label class="switch">
          <input type="checkbox" checked={form.lan} onChange={(e) => api.edit({ lan: e.currentTarget.checked })} />
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
              <input type="text" value={form.lanAddress} placeholder="192.168.1.20" onInput={(e) => api.edit({ lanAddress: e.currentTarget.value })} />
            </label>
          </>
        )}
      </div>
      {changed && (
        <button type="button" class="primary" disabled={working} onClick={api.restart}>
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
