// Settings › New chats, the controller: the defaults every new conversation starts with, the form
// that edits them, "Reset to model defaults" (from the checkpoint's generation_config.json) and the
// backends a new chat may be answered by.
// Owns: the section's engine calls. Must not: render (components/NewChatSettings.tsx draws) or let
// an engine error escape (it becomes `status`).
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { ChatDefaultsView } from "../generated/ipc";
import { type NewChatForm, parseDefaults, toNewChatForm } from "../state/chatSettings";
import { useBackendChoices } from "./backends";

export interface NewChatDefaults {
  view: ChatDefaultsView | null;
  form: NewChatForm | null;
  status: string | null;
  backends: ReturnType<typeof useBackendChoices>["backends"];
  edit(patch: Partial<NewChatForm>): void;
  save(): Promise<void>;
  /** Puts the model's own defaults in the form (saved only with Save). */
  resetToModel(): void;
}

export function useNewChatDefaults(): NewChatDefaults {
  const [view, setView] = useState<ChatDefaultsView | null>(null);
  const [form, setForm] = useState<NewChatForm | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const { backends } = useBackendChoices(null);
  useEffect(() => {
    engine.chatDefaults().then(
      (v) => {
        setView(v);
        setForm(toNewChatForm(v.defaults));
      },
      (e) => setStatus(e.message),
    );
  }, []);
  const edit = (patch: Partial<NewChatForm>) => form && setForm({ ...form, ...patch });
  const save = async () => {
    if (!view || !form) return;
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
  const resetToModel = () => {
    const m = view?.modelDefaults;
    if (!m || !form) return;
    edit({
      temperature: String(m.temperature ?? form.temperature),
      topP: String(m.topP ?? form.topP),
      maxTokens: String(m.maxTokens ?? form.maxTokens),
    });
    setStatus("The model's defaults are in the form; save to keep them.");
  };
  return { view, form, status, backends, edit, save, resetToModel };
}
