// Settings › New chats: the sampling settings and system prompt every new conversation starts
// with (a chat's own "Chat settings" still override them), who answers them (this computer unless a
// remote backend is chosen here), and "Reset to model defaults" from the loaded checkpoint's
// generation_config.json.
// Owns: the form; values are checked with the conversation form's own rules (parseSettings).
import { useEffect, useState } from "preact/hooks";
import type { BackendView, ChatDefaults, ChatDefaultsView } from "../generated/ipc";
import * as engine from "../api/engine";
import { parseSettings } from "./SettingsPanel";

interface Form {
  temperature: string;
  topP: string;
  maxTokens: string;
  thinking: boolean;
  systemPrompt: string;
  /** A Settings › Backends id; "" is this computer. */
  backend: string;
}

const toForm = (d: ChatDefaults): Form => ({
  temperature: String(d.temperature),
  topP: String(d.topP),
  maxTokens: String(d.maxTokens),
  thinking: d.thinking,
  systemPrompt: d.systemPrompt,
  backend: d.backend ?? "",
});

/** The defaults, or the first problem in words. */
export function parseDefaults(f: Form): ChatDefaults | string {
  const s = parseSettings({ ...f, title: "", seed: "0", thinkingEffort: "", toolServers: [], toolsOff: [], toolChoice: "auto" });
  if (typeof s === "string") return s;
  return {
    temperature: s.temperature,
    topP: s.topP,
    maxTokens: s.maxTokens,
    thinking: s.thinking,
    systemPrompt: f.systemPrompt,
    backend: f.backend === "" ? null : f.backend,
  };
}

export function NewChatSettings() {
  const [view, setView] = useState<ChatDefaultsView | null>(null);
  const [form, setForm] = useState<Form | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [backends, setBackends] = useState<BackendView[]>([]);
  useEffect(() => {
    void engine.listBackends().then(setBackends).catch(() => undefined);
  }, []);
  useEffect(() => {
    engine.chatDefaults().then(
      (v) => {
        setView(v);
        setForm(toForm(v.defaults));
      },
      (e) => setStatus(e.message),
    );
  }, []);
  if (!view || !form) return <section class="settings-section"><h2>New chats</h2><p>{status ?? "Loading…"}</p></section>;
  const set = (patch: Partial<Form>) => setForm({ ...form, ...patch });
  const save = async (e: Event) => {
    e.preventDefault();
    const parsed = parseDefaults(form);
    if (typeof parsed === "string") return setStatus(parsed);
    try {
      const saved = await engine.setChatDefaults(parsed);
      setView({ ...view, defaults: saved });
      setStatus("Saved: new chats start with these settings.");
    } catch (err) {
      setStatus((err as { message: string }).message);
    }
  };
  const m = view.modelDefaults;
  const reset = () => {
    if (!m) return;
    set({
      temperature: String(m.temperature ?? form.temperature),
      topP: String(m.topP ?? form.topP),
      maxTokens: String(m.maxTokens ?? form.maxTokens),
    });
    setStatus("The model's defaults are in the form; save to keep them.");
  };
  return (
    <section class="settings-section" aria-labelledby="new-chats-title" data-testid="new-chat-settings">
      <h2 id="new-chats-title">New chats</h2>
      <p class="muted">What every new conversation starts with. Each chat can change its own in "Chat settings".</p>
      <form class="new-chat-form" onSubmit={(e) => void save(e)}>
        <label>
          <span>
            Temperature <span class="muted">(0 = greedy)</span>
          </span>
          <input aria-label="Default temperature" inputMode="decimal" value={form.temperature} onInput={(e) => set({ temperature: e.currentTarget.value })} />
        </label>
        <label>
          Top-p <input aria-label="Default top-p" inputMode="decimal" value={form.topP} onInput={(e) => set({ topP: e.currentTarget.value })} />
        </label>
        <label>
          Max tokens <input aria-label="Default max tokens" inputMode="numeric" value={form.maxTokens} onInput={(e) => set({ maxTokens: e.currentTarget.value })} />
        </label>
        <label class="check">
          <input type="checkbox" checked={form.thinking} onChange={(e) => set({ thinking: e.currentTarget.checked })} /> Thinking
        </label>
        <label class="wide">
          System prompt
          <textarea aria-label="Default system prompt" rows={3} value={form.systemPrompt} onInput={(e) => set({ systemPrompt: e.currentTarget.value })} />
        </label>
        {(backends.length > 0 || form.backend !== "") && (
          <label class="wide">
            Answered by
            <select aria-label="New chats answered by" data-testid="default-backend" value={form.backend} onChange={(e) => set({ backend: e.currentTarget.value })}>
              <option value="">This computer</option>
              {backends.map((b) => (
                <option key={b.id} value={b.id}>
                  {b.name} ({b.host}) — prompts leave this machine
                </option>
              ))}
            </select>
          </label>
        )}
        <div class="settings-actions">
          <button type="submit" class="primary">Save</button>
          <button type="button" disabled={!m} onClick={reset} title={view.modelNote ?? "From the model's generation_config.json"}>
            Reset to model defaults
          </button>
          {!m && view.modelNote && <span class="muted">{view.modelNote}</span>}
        </div>
      </form>
      {status && <p role="status">{status}</p>}
    </section>
  );
}
