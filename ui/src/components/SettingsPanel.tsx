// Per-conversation settings: title, system prompt, sampling (temperature, 0 = greedy; top-p; seed;
// max tokens; thinking and its effort) and tools, saved through update_conversation.
// Owns: drawing the form; parsing it into SamplingSettings is state/chatSettings.ts's (a value out of
// range is reported, never clamped silently).
import { useEffect, useState } from "preact/hooks";
import type { Conversation, ThinkingEffort } from "../generated/ipc";
import { type ChatSettingsForm, parseSettings, toChatSettingsForm as toForm } from "../state/chatSettings";
import type { SettingsUpdate } from "../controllers/chat";
import { ConversationTools } from "./ConversationTools";

interface Props {
  conversation: Conversation;
  onSave(u: SettingsUpdate): Promise<boolean>;
  onInvalid(message: string): void;
  onClose(): void;
}

type Form = ChatSettingsForm;

const EFFORTS: { value: ThinkingEffort | ""; label: string }[] = [
  { value: "", label: "Default" },
  { value: "low", label: "Low" },
  { value: "high", label: "High" },
  { value: "max", label: "Max" },
];

export function SettingsPanel({ conversation, onSave, onInvalid, onClose }: Props) {
  const [form, setForm] = useState(() => toForm(conversation));
  useEffect(() => setForm(toForm(conversation)), [conversation.id, conversation.updatedAt]);
  const set = (patch: Partial<Form>) => setForm((f) => ({ ...f, ...patch }));

  const submit = async (e: Event) => {
    e.preventDefault();
    const parsed = parseSettings(form);
    if (typeof parsed === "string") return onInvalid(parsed);
    const title = form.title.trim() || conversation.title;
    if (await onSave({ title, systemPrompt: form.systemPrompt, settings: parsed })) onClose();
  };

  return (
    <form class="settings" aria-label="Conversation settings" noValidate onSubmit={submit}>
      <label for="conversation-title">Title</label>
      <input id="conversation-title" aria-label="Title" value={form.title} onInput={(e) => set({ title: e.currentTarget.value })} />
      <label for="system-prompt">System prompt</label>
      <textarea
        id="system-prompt"
        aria-label="System prompt"
        rows={2}
        value={form.systemPrompt}
        onInput={(e) => set({ systemPrompt: e.currentTarget.value })}
      />
      <div class="settings-grid">
        <label for="temperature">Temperature <small>(0 = greedy)</small></label>
        <input id="temperature" aria-label="Temperature" type="number" min="0" max="2" step="0.05" value={form.temperature} onInput={(e) => set({ temperature: e.currentTarget.value })} />
        <label for="top-p">Top-p</label>
        <input id="top-p" aria-label="Top-p" type="number" min="0" max="1" step="0.01" value={form.topP} onInput={(e) => set({ topP: e.currentTarget.value })} />
        <label for="seed">Seed</label>
        <input id="seed" aria-label="Seed" type="number" min="0" step="1" value={form.seed} onInput={(e) => set({ seed: e.currentTarget.value })} />
        <label for="max-tokens">Max tokens</label>
        <input id="max-tokens" aria-label="Max tokens" type="number" min="1" step="1" value={form.maxTokens} onInput={(e) => set({ maxTokens: e.currentTarget.value })} />
        <label for="thinking">Thinking, effort</label>
        <span class="thinking-row">
          <input id="thinking" aria-label="Thinking" type="checkbox" checked={form.thinking} onChange={(e) => set({ thinking: e.currentTarget.checked })} />
          <select
            id="thinking-effort"
            aria-label="Thinking effort"
            disabled={!form.thinking}
            title={form.thinking ? "How long K3 thinks before it answers" : "Turn thinking on to choose an effort"}
            value={form.thinkingEffort}
            onChange={(e) => set({ thinkingEffort: e.currentTarget.value as ThinkingEffort | "" })}
          >
            {EFFORTS.map((e) => (
              <option key={e.value} value={e.value}>
                {e.label}
              </option>
            ))}
          </select>
        </span>
      </div>
      <ConversationTools form={form} onChange={(t) => set(t)} />
      <div class="settings-actions">
        <button type="submit" class="primary" aria-label="Save settings">
          Save
        </button>
        <button type="button" aria-label="Close settings" onClick={onClose}>
          Close
        </button>
      </div>
    </form>
  );
}
