// The chat window's actions: each one calls the engine client and dispatches what came back.
// Owns: ordering of IPC calls (create a chat before the first send, refresh the list after a reply),
// stop before the job id is known, and routing every IpcError to the alert region.
// Must not: render, or import @tauri-apps/api (api/engine.ts is the only door).
// Easy to break: an action must never throw into a component; each catches and dispatches the error.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { ExportFormat, GenerationEvent, ModelInfo, SamplingSettings } from "../generated/ipc";
import { createBatcher } from "../state/batcher";
import { type ChatAction, type ChatState, chatReducer, initialChatState } from "../state/chat";
import { type GenerationMode, isRunning } from "../state/stream";

export interface SettingsUpdate {
  title: string;
  systemPrompt: string;
  settings: SamplingSettings;
}

export interface ChatActions {
  init(): Promise<void>;
  newChat(): Promise<void>;
  select(id: number): Promise<void>;
  remove(id: number): Promise<void>;
  exportTo(id: number, format: ExportFormat): Promise<void>;
  saveSettings(u: SettingsUpdate): Promise<boolean>;
  /** Who answers the open conversation: a remote backend's id, or null for this computer. */
  setBackend(backend: string | null): Promise<void>;
  /** Resolves true when the generation was accepted (the composer may clear). */
  send(text: string): Promise<boolean>;
  regenerate(): Promise<void>;
  resend(messageId: number, text: string): Promise<void>;
  /** Answers the tool results after the last reply (the tool loop's next step). */
  continueReply(): Promise<void>;
  /** Reads the open conversation again (a tool message was saved beside the stream). */
  reload(): Promise<void>;
  stop(): Promise<void>;
  openModelFolder(): Promise<void>;
  /** A model another screen loaded (the setup wizard's first load). */
  modelReady(model: ModelInfo): void;
  startEdit(messageId: number): void;
  cancelEdit(): void;
  /** Show a form problem in the error region. */
  reportInvalid(message: string): void;
  dismissError(): void;
  dismissNotice(): void;
  /** Hide the history's startup notice (only one about a history that is saved). */
  dismissHistoryNotice(): void;
}

let nextLocalId = 1;

export function createActions(dispatch: (a: ChatAction) => void, get: () => ChatState): ChatActions {
  const fail = (e: unknown) => dispatch({ type: "error", error: engine.toIpcError(e) });

  async function refreshList() {
    try {
      dispatch({ type: "conversationsLoaded", conversations: await engine.listConversations() });
    } catch (e) {
      fail(e);
    }
  }

  async function open(id: number | null) {
    try {
      dispatch({ type: "conversationOpened", conversation: id === null ? null : await engine.getConversation(id) });
    } catch (e) {
      fail(e);
    }
  }

  async function ensureConversation(): Promise<number> {
    const cur = get().current;
    if (cur) return cur.id;
    const created = await engine.createConversation();
    dispatch({ type: "conversationOpened", conversation: created });
    void refreshList();
    return created.id;
  }

  async function generate(mode: GenerationMode, conversationId: number): Promise<boolean> {
    if (isRunning(get().stream)) return false;
    const localId = nextLocalId++;
    const maxTokens = get().current?.settings.maxTokens ?? 0;
    dispatch({ type: "generationBegin", start: { localId, conversationId, mode, maxTokens } });
    const push = createBatcher<GenerationEvent>((events, at) => {
      dispatch({ type: "generationEvents", localId, events, at });
      if (events.some((e) => e.type === "finished" || e.type === "failed")) void refreshList();
    });
    const req: engine.GenerationRequest =
      mode.kind === "send"
        ? { kind: "send", conversationId, text: mode.text }
        : mode.kind === "edit"
          ? { kind: "edit", conversationId, messageId: mode.messageId, text: mode.text }
          : { kind: mode.kind, conversationId };
    try {
      const jobId = await engine.startGeneration(req, push);
      dispatch({ type: "generationJob", localId, jobId });
      const s = get().stream;
      if (s && s.localId === localId && s.stopRequested && isRunning(s)) await engine.cancelGeneration(jobId);
      return true;
    } catch (e) {
      dispatch({ type: "generationRejected", localId, error: engine.toIpcError(e) });
      return false;
    }
  }

  return {
    async init() {
      dispatch({ type: "modelLoading" });
      const modelTask = engine
        .currentModel()
        .then((st) => dispatch({ type: "modelLoaded", model: st.model, error: st.error }))
        .catch((e) => dispatch({ type: "modelLoaded", model: null, error: engine.toIpcError(e) }));
      const historyTask = engine
        .historyNotice()
        .then((notice) => dispatch({ type: "historyNotice", notice }))
        .catch(fail);
      try {
        const list = await engine.listConversations();
        dispatch({ type: "conversationsLoaded", conversations: list });
        if (list[0] && !get().current) await open(list[0].id);
      } catch (e) {
        fail(e);
      }
      await Promise.all([modelTask, historyTask]);
    },
    async newChat() {
      const cur = get().current;
      if (cur && cur.messages.length === 0) return;
      try {
        dispatch({ type: "conversationOpened", conversation: await engine.createConversation() });
        await refreshList();
      } catch (e) {
        fail(e);
      }
    },
    select: (id) => open(id),
    async remove(id) {
      try {
        await engine.deleteConversation(id);
        dispatch({ type: "conversationDeleted", id });
        await refreshList();
        const st = get();
        if (!st.current && st.conversations[0]) await open(st.conversations[0].id);
      } catch (e) {
        fail(e);
      }
    },
    async exportTo(id, format) {
      try {
        const path = await engine.saveExport(id, format);
        if (path) dispatch({ type: "notice", notice: `Exported to ${path}` });
      } catch (e) {
        fail(e);
      }
    },
    async saveSettings(u) {
      const cur = get().current;
      if (!cur) return false;
      try {
        const conversation = await engine.updateConversation({ id: cur.id, ...u });
        dispatch({ type: "conversationUpdated", conversation });
        dispatch({ type: "error", error: null });
        dispatch({ type: "notice", notice: "Settings saved" });
        return true;
      } catch (e) {
        fail(e);
        return false;
      }
    },
    async setBackend(backend) {
      const cur = get().current;
      if (!cur) return;
      try {
        const conversation = await engine.setConversationBackend(cur.id, backend);
        dispatch({ type: "conversationUpdated", conversation });
        dispatch({ type: "error", error: null });
      } catch (e) {
        fail(e);
      }
    },
    async send(text) {
      if (!text.trim() || isRunning(get().stream)) return false;
      try {
        const id = await ensureConversation();
        return await generate({ kind: "send", text }, id);
      } catch (e) {
        fail(e);
        return false;
      }
    },
    async regenerate() {
      const cur = get().current;
      if (cur) await generate({ kind: "regenerate" }, cur.id);
    },
    async resend(messageId, text) {
      const cur = get().current;
      if (cur && text.trim()) await generate({ kind: "edit", messageId, text }, cur.id);
    },
    async continueReply() {
      const cur = get().current;
      if (cur) await generate({ kind: "continue" }, cur.id);
    },
    async reload() {
      const cur = get().current;
      if (cur) await open(cur.id);
    },
    async stop() {
      const s = get().stream;
      if (!s || !isRunning(s)) return;
      dispatch({ type: "stopRequested" });
      if (s.jobId === null) return; // cancelled as soon as the job id arrives
      try {
        await engine.cancelGeneration(s.jobId);
      } catch (e) {
        fail(e);
      }
    },
    async openModelFolder() {
      try {
        const path = await engine.pickModelFolder();
        if (path === null) return;
        dispatch({ type: "modelLoading" });
        dispatch({ type: "modelLoaded", model: await engine.openModel(path), error: null });
      } catch (e) {
        dispatch({ type: "modelLoaded", model: null, error: engine.toIpcError(e) });
      }
    },
    modelReady: (model) => dispatch({ type: "modelLoaded", model, error: null }),
    startEdit: (messageId) => dispatch({ type: "editStart", messageId }),
    cancelEdit: () => dispatch({ type: "editCancel" }),
    reportInvalid: (message) => dispatch({ type: "error", error: { code: "INVALID_ARGUMENT", message, details: null } }),
    dismissError: () => dispatch({ type: "error", error: null }),
    dismissNotice: () => dispatch({ type: "notice", notice: null }),
    dismissHistoryNotice: () => {
      if (get().historyNotice?.saved) dispatch({ type: "historyNotice", notice: null });
    },
  };
}

/** The chat state plus its actions, for the App component. The ref is the source of truth so an
 *  action's `get()` sees its own dispatches before the next render. */
export function useChat(): [ChatState, ChatActions] {
  const [state, setState] = useState(initialChatState);
  const ref = useRef(state);
  const actions = useMemo(
    () =>
      createActions(
        (a) => {
          ref.current = chatReducer(ref.current, a);
          setState(ref.current);
        },
        () => ref.current,
      ),
    [],
  );
  useEffect(() => {
    void actions.init();
  }, [actions]);
  return [state, actions];
}
