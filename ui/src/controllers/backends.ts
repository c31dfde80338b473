// Remote backends, the controller: Settings › Backends' list, Add form, "List models", "Test" and
// Remove, and the list the conversation's "Answered by" picker and remote marker read.
// Owns: every engine call about backends. Must not: render (components/BackendSettings.tsx and
// BackendPicker.tsx draw), keep a key after it is sent (it goes to the OS keyring or a user-only
// file), or let an engine error escape (it becomes `message`).
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { BackendTest, BackendView, NewBackend } from "../generated/ipc";
import { backendFormProblem, EMPTY_BACKEND, isHttpUrl } from "../state/backends";

export type Tested = { id: string; result: BackendTest | null; error: string | null; running: boolean };

export interface Backends {
  /** Null while the list is read. */
  list: BackendView[] | null;
  form: NewBackend;
  message: string | null;
  tested: Tested | null;
  /** The model ids the endpoint listed, offered for the form's model. */
  models: string[];
  edit(patch: Partial<NewBackend>): void;
  add(): Promise<void>;
  listModels(): Promise<void>;
  test(id: string): Promise<void>;
  remove(id: string): Promise<void>;
}

export function useBackends(): Backends {
  const [list, setList] = useState<BackendView[] | null>(null);
  const [form, setForm] = useState<NewBackend>(EMPTY_BACKEND);
  const [message, setMessage] = useState<string | null>(null);
  const [tested, setTested] = useState<Tested | null>(null);
  const [models, setModels] = useState<string[]>([]);
  useEffect(() => {
    void engine.listBackends().then(setList).catch((e) => setMessage(engine.toIpcError(e).message));
  }, []);
  const edit = (patch: Partial<NewBackend>) => setForm({ ...form, ...patch });

  const add = async () => {
    const problem = backendFormProblem(form);
    if (problem) return setMessage(problem);
    try {
      const added = await engine.addBackend({ ...form, name: form.name.trim(), baseUrl: form.baseUrl.trim(), model: form.model.trim() });
      setList([...(list ?? []), added]);
      setForm(EMPTY_BACKEND);
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
      if (form.model.trim() === "" && ids.length > 0) edit({ model: ids[0]! });
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
  return { list, form, message, tested, models, edit, add, listModels, test, remove };
}

/** The backends a conversation may be answered by, read again on `refresh` (a backend added in
 * Settings appears) and whenever `key` changes. A failed read keeps the last list. */
export function useBackendChoices(key: unknown): { backends: BackendView[]; refresh(): void } {
  const [backends, setBackends] = useState<BackendView[]>([]);
  const refresh = () => void engine.listBackends().then(setBackends).catch(() => undefined);
  useEffect(refresh, [key]);
  return { backends, refresh };
}

/** The host of backend `id`: undefined while the list is read, null when it is no longer in it
 * (or the list cannot be read). */
export function useBackendHost(id: string | null): string | null | undefined {
  const [host, setHost] = useState<string | null | undefined>(undefined);
  useEffect(() => {
    setHost(undefined);
    if (id === null) return;
    let live = true;
    void engine
      .listBackends()
      .then((list) => live && setHost(list.find((b) => b.id === id)?.host ?? null))
      .catch(() => live && setHost(null));
    return () => {
      live = false;
    };
  }, [id]);
  return host;
}
