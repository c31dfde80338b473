// Settings › Backends: remote OpenAI-compatible endpoints (a vLLM or SGLang cluster, a hosted API,
// another machine's k3 serve) that a conversation can be answered by instead of this computer.
// Owns: the list (where each one's prompts go and where its key is kept), the Add form (its model id
// picked from the endpoint's /v1/models with "List models", or typed), "Test" (one
// short request, its reply time shown) and Remove. The default for every chat stays this computer.
// Must not: keep or show a key after it is sent: the key goes to the OS keyring (or a user-only file).
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { BackendTest, BackendView, NewBackend } from "../generated/ipc";
import { formatDuration } from "../state/format";

const EMPTY: NewBackend = { name: "", baseUrl: "", apiKey: "", model: "" };
const isHttpUrl = (url: string) => /^https?:\/\/\S+$/i.test(url.trim());

/** The first problem with the Add form, in words; null when it can be sent. */
export function backendFormProblem(f: NewBackend): string | null {
  if (!f.name.trim()) return "Give the backend a name.";
  if (!isHttpUrl(f.baseUrl)) return "The base URL starts with http:// or https:// (for example https://host/v1).";
  if (!f.model.trim()) return "Enter the model id the endpoint serves (its /v1/models lists them).";
  return null;
}

function keyWords(b: BackendView): string {
  if (b.key === "systemKeyring") return "key in the system keyring";
  if (b.key === "userFile") return "key in a file only you can read (no system keyring answered)";
  return "no key";
}

type Tested = { id: string; result: BackendTest | null; error: string | null; running: boolean };

export function BackendSettings() {
  const [list, setList] = useState<BackendView[] | null>(null);
  const [form, setForm] = useState<NewBackend>(EMPTY);
  const [message, setMessage] = useState<string | null>(null);
  const [tested, setTested] = useState<Tested | null>(null);
  const [models, setModels] = useState<string[]>([]);
  useEffect(() => {
    void engine.listBackends().then(setList).catch((e) => setMessage(engine.toIpcError(e).message));
  }, []);
  const set = (patch: Partial<NewBackend>) => setForm({ ...form, ...patch });

  const add = async (e: Event) => {
    e.preventDefault();
    const problem = backendFormProblem(form);
    if (problem) return setMessage(problem);
    try {
      const added = await engine.addBackend({ ...form, name: form.name.trim(), baseUrl: form.baseUrl.trim(), model: form.model.trim() });
      setList([...(list ?? []), added]);
      setForm(EMPTY);
      setMessage(null);
    } catch (err) {
      setMessage(engine.toIpcError(err).message);
    }
  };
  const listModels = async () => {
    if (!isHttpUrl(form.baseUrl)) return setMessage("Enter the base URL first (for example https://host/v1).");
    try {
      const ids = await engine.listRemoteModels(form.baseUrl.trim(), form.apiKey);
      setModels(ids);
      setMessage(ids.length === 0 ? "The endpoint lists no models: enter the model id by hand." : null);
      if (form.model.trim() === "" && ids.length > 0) set({ model: ids[0]! });
    } catch (err) {
      setMessage(engine.toIpcError(err).message);
    }
  };
  const test = async (id: string) => {
    setTested({ id, result: null, error: null, running: true });
    try {
      setTested({ id, result: await engine.testBackend(id), error: null, running: false });
    } catch (err) {
      setTested({ id, result: null, error: engine.toIpcError(err).message, running: false });
    }
  };
  const remove = async (id: string) => {
    try {
      await engine.removeBackend(id);
      setList((list ?? []).filter((b) => b.id !== id));
    } catch (err) {
      setMessage(engine.toIpcError(err).message);
    }
  };

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
                <button type="button" data-testid="backend-test" disabled={tested?.running} onClick={() => void test(b.id)}>
                  Test
                </button>
                <button type="button" onClick={() => void remove(b.id)}>
                  Remove
                </button>
              </span>
              {tested?.id === b.id && <TestLine tested={tested} />}
            </li>
          ))}
        </ul>
      )}
      <form class="settings-grid backend-form" aria-label="Add a backend" noValidate onSubmit={add}>
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
            <button type="button" data-testid="backend-list-models" onClick={() => void listModels()}>
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
