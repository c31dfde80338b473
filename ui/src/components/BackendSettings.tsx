// Settings › Backends: remote OpenAI-compatible endpoints (a vLLM or SGLang cluster, a hosted API,
// another machine's k3 serve) that a conversation can be answered by instead of this computer.
// Owns: drawing the list (where each one's prompts go and where its key is kept), the Add form (its
// model id picked from the endpoint's /v1/models with "List models", or typed), "Test" (one short
// request, its reply time shown) and Remove; the calls are controllers/backends.ts's, the form's
// checks state/backends.ts's. The default for every chat stays this computer.
// Must not: show a key after it is sent: the key goes to the OS keyring (or a user-only file).
import { type Tested, useBackends } from "../controllers/backends";
import { formatDuration } from "../state/format";
import { keyWords } from "../state/backends";

export function BackendSettings() {
  const ctl = useBackends();
  const { list, form, message, tested, models } = ctl;
  const set = ctl.edit;

  return (
    <section class="settings-section" aria-labelledby="backends-title" data-testid="backend-settings">
      <h2 id="backends-title">Backends</h2>
      <p class="muted">
        A conversation can be answered by a remote OpenAI-compatible server instead of this computer. Its prompts then leave
        this machine for that server; chats stay answered here unless you choose a backend for them.
      </p>
      {list === null ? (
        <p class="muted">Reading the backends…</p>
      ) : list.length === 0 ? (
        <p class="muted">No remote backends: every chat is answered on this computer.</p>
      ) : (
        <ul class="backend-list" data-testid="backend-list">
          {list.map((b) => (
            <li key={b.id} data-backend={b.id}>
              <strong>{b.name}</strong> <span class="muted">{b.model} at {b.host} · {keyWords(b)}</span>
              <span class="row">
                <button type="button" data-testid="backend-test" disabled={tested?.running} onClick={() => void ctl.test(b.id)}>
                  Test
                </button>
                <button type="button" onClick={() => void ctl.remove(b.id)}>
                  Remove
                </button>
              </span>
              {tested?.id === b.id && <TestLine tested={tested} />}
            </li>
          ))}
        </ul>
      )}
      <form class="settings-grid backend-form" aria-label="Add a backend" noValidate onSubmit={(e) => {
        e.preventDefault();
        void ctl.add();
      }}>
        <label>
          Name
          <input type="text" data-testid="backend-name" value={form.name} placeholder="GPU box" onInput={(e) => set({ name: e.currentTarget.value })} />
        </label>
        <label>
          Base URL
          <input type="url" spellcheck={false} data-testid="backend-url" value={form.baseUrl} placeholder="https://host:8000/v1" onInput={(e) => set({ baseUrl: e.currentTarget.value })} />
        </label>
        <label>
          API key (optional)
          <input type="password" autoComplete="off" data-testid="backend-key" value={form.apiKey} onInput={(e) => set({ apiKey: e.currentTarget.value })} />
        </label>
        <label>
          Model id
          <span class="row">
            <input type="text" spellcheck={false} list="backend-models" data-testid="backend-model" value={form.model} placeholder="moonshotai/Kimi-K3" onInput={(e) => set({ model: e.currentTarget.value })} />
            <button type="button" data-testid="backend-list-models" onClick={() => void ctl.listModels()}>
              List models
            </button>
          </span>
          <datalist id="backend-models">
            {models.map((m) => (
              <option key={m} value={m} />
            ))}
          </datalist>
        </label>
        <button type="submit" class="primary" data-testid="backend-add">
          Add backend
        </button>
      </form>
      {message && <p class="field-error" role="alert">{message}</p>}
    </section>
  );
}

function TestLine({ tested }: { tested: Tested }) {
  if (tested.running) return <p class="muted" role="status">Sending one short request…</p>;
  if (tested.error) return <p class="field-error" role="alert" data-testid="backend-test-result">{tested.error}</p>;
  const r = tested.result;
  if (!r) return null;
  return (
    <p class="api-state on" role="status" data-testid="backend-test-result">
      Replied in {formatDuration(r.replyMs)}: “{r.reply.trim() || "(an empty reply)"}” · serves {r.models.join(", ") || "no listed model"}
    </p>
  );
}
