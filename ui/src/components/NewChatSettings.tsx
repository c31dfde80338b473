// Settings › New chats: the sampling settings and system prompt every new conversation starts
// with (a chat's own "Chat settings" still override them), who answers them (this computer unless a
// remote backend is chosen here), and "Reset to model defaults" from the loaded checkpoint's
// generation_config.json.
// Owns: drawing the form. The defaults, the save and the reset are controllers/newChat.ts's; values
// are checked with the conversation form's own rules (state/chatSettings.ts).
import { useNewChatDefaults } from "../controllers/newChat";

export function NewChatSettings() {
  const ctl = useNewChatDefaults();
  const { view, form, status, backends } = ctl;
  if (!view || !form) return <section class="settings-section"><h2>New chats</h2><p>{status ?? "Loading…"}</p></section>;
  const set = ctl.edit;
  const m = view.modelDefaults;
  return (
    <section class="settings-section" aria-labelledby="new-chats-title" data-testid="new-chat-settings">
      <h2 id="new-chats-title">New chats</h2>
      <p class="muted">What every new conversation starts with. Each chat can change its own in "Chat settings".</p>
      <form
        class="new-chat-form"
        onSubmit={(e) => {
          e.preventDefault();
          void ctl.save();
        }}
      >
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
          <button type="button" disabled={!m} onClick={ctl.resetToModel} title={view.modelNote ?? "From the model's generation_config.json"}>
            Reset to model defaults
          </button>
          {!m && view.modelNote && <span class="muted">{view.modelNote}</span>}
        </div>
      </form>
      {status && <p role="status">{status}</p>}
    </section>
  );
}
