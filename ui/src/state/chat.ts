// Chat window state: model, conversation list, open conversation, the generation stream, edits, errors.
// Owns: every state transition of the chat window as one pure reducer, and the rule for how a
// generation rewrites the open conversation (send appends, regenerate drops the last reply, edit
// truncates at the edited message), both before `started` (as a preview) and after (committed).
// Must not: call the engine or touch the DOM (controller.ts does the first, components the second).
// Easy to break: a conversation loaded from history may already hold the saved messages an event
// carries, so every append is by id and idempotent.
import type {
  Conversation,
  ConversationSummary,
  GenerationEvent,
  HistoryNotice,
  IpcError,
  Message,
  ModelInfo,
} from "../generated/ipc";
import { type Stream, type StreamStart, newStream, streamReducer } from "./stream";

export interface ChatState {
  model: ModelInfo | null;
  modelLoading: boolean;
  conversations: ConversationSummary[];
  current: Conversation | null;
  stream: Stream | null;
  editingId: number | null;
  error: IpcError | null;
  notice: string | null;
  /** The history's startup notice; stays until dismissed (and cannot be while chats are not saved). */
  historyNotice: HistoryNotice | null;
}

export const initialChatState: ChatState = {
  model: null,
  modelLoading: true,
  conversations: [],
  current: null,
  stream: null,
  editingId: null,
  error: null,
  notice: null,
  historyNotice: null,
};

export type ChatAction =
  | { type: "modelLoading" }
  | { type: "modelLoaded"; model: ModelInfo | null; error: IpcError | null }
  | { type: "conversationsLoaded"; conversations: ConversationSummary[] }
  | { type: "conversationOpened"; conversation: Conversation | null }
  | { type: "conversationUpdated"; conversation: Conversation }
  | { type: "conversationDeleted"; id: number }
  | { type: "generationBegin"; start: StreamStart }
  | { type: "generationJob"; localId: number; jobId: number }
  | { type: "generationRejected"; localId: number; error: IpcError }
  | { type: "generationEvents"; localId: number; events: GenerationEvent[]; at: number }
  | { type: "stopRequested" }
  | { type: "editStart"; messageId: number }
  | { type: "editCancel" }
  | { type: "error"; error: IpcError | null }
  | { type: "notice"; notice: string | null }
  | { type: "historyNotice"; notice: HistoryNotice | null };

/** A message as displayed: `saved` is false for the preview of a user message not yet stored. */
export interface Shown {
  message: Message;
  saved: boolean;
}

function upsert(messages: Message[], m: Message): Message[] {
  const i = messages.findIndex((x) => x.id === m.id);
  if (i < 0) return [...messages, m];
  const next = messages.slice();
  next[i] = m;
  return next;
}

/** The messages once the stream's request has been applied (by the engine, or as a preview). */
function applyRequest(messages: Message[], s: Stream, user: Message): Message[] {
  switch (s.mode.kind) {
    case "send":
      return upsert(messages, user);
    case "regenerate": {
      const last = messages[messages.length - 1];
      return last && last.role === "assistant" ? messages.slice(0, -1) : messages;
    }
    case "edit": {
      const id = s.mode.messageId;
      const i = messages.findIndex((m) => m.id === id);
      return i < 0 ? messages : [...messages.slice(0, i), user];
    }
    case "continue":
      return messages;
  }
}

function previewUser(messages: Message[], s: Stream): Message {
  const text = s.mode.kind === "send" || s.mode.kind === "edit" ? s.mode.text : "";
  const id = s.mode.kind === "edit" ? s.mode.messageId : -s.localId;
  const old = messages.find((m) => m.id === id);
  return {
    id, role: "user", content: text, think: null, status: "complete", stats: null, failure: null, toolCalls: [], toolAnswer: null,
    createdAt: old?.createdAt ?? 0,
  };
}

/** Messages to render for the open conversation, with the pending request previewed. */
export function shownMessages(state: ChatState): Shown[] {
  const conv = state.current;
  if (!conv) return [];
  const s = state.stream;
  if (!s || s.started || s.conversationId !== conv.id || s.phase.kind === "failed") {
    return conv.messages.map((message) => ({ message, saved: true }));
  }
  const user = previewUser(conv.messages, s);
  return applyRequest(conv.messages, s, user).map((message) => ({ message, saved: message !== user }));
}

/** The stream to show as a live bubble in the open conversation, if any: running, or failed with
 *  nothing saved (its partial text is kept on screen). */
export function liveStream(state: ChatState): Stream | null {
  const s = state.stream;
  if (!s || !state.current || s.conversationId !== state.current.id) return null;
  return s.result ? null : s;
}

function withCurrent(state: ChatState, s: Stream, f: (c: Conversation) => Conversation): ChatState {
  const c = state.current;
  return c && c.id === s.conversationId ? { ...state, current: f(c) } : state;
}

function applyEvents(state: ChatState, events: GenerationEvent[], at: number): ChatState {
  let next = state;
  for (const e of events) {
    const before = next.stream;
    if (!before) return next;
    const s = streamReducer(before, e, at);
    next = { ...next, stream: s };
    if (s === before) continue;
    if (e.type === "started") {
      const user = e.userMessage ?? previewUser(next.current?.messages ?? [], s);
      next = withCurrent(next, s, (c) => ({ ...c, messages: applyRequest(c.messages, s, user) }));
    } else if ((e.type === "finished" || e.type === "failed") && e.message) {
      const saved = e.message;
      next = withCurrent(next, s, (c) => ({ ...c, messages: upsert(c.messages, saved) }));
    }
    if (e.type === "failed") next = { ...next, error: e.error };
  }
  return next;
}

function ownStream(state: ChatState, localId: number): Stream | null {
  return state.stream && state.stream.localId === localId ? state.stream : null;
}

export function chatReducer(state: ChatState, a: ChatAction): ChatState {
  switch (a.type) {
    case "modelLoading":
      return { ...state, modelLoading: true };
    case "modelLoaded":
      return { ...state, modelLoading: false, model: a.model ?? state.model, error: a.error ?? state.error };
    case "conversationsLoaded": {
      const cur = state.current;
      const mine = cur ? a.conversations.find((x) => x.id === cur.id) : undefined;
      const current = cur && mine && mine.title !== cur.title ? { ...cur, title: mine.title } : cur;
      return { ...state, conversations: a.conversations, current };
    }
    case "conversationOpened":
      return { ...state, current: a.conversation, editingId: null };
    case "conversationUpdated": {
      const c = a.conversation;
      const conversations = state.conversations.map((x) => (x.id === c.id ? { ...x, title: c.title, updatedAt: c.updatedAt, backend: c.backend } : x));
      const current = state.current && state.current.id === c.id ? c : state.current;
      return { ...state, conversations, current };
    }
    case "conversationDeleted": {
      const conversations = state.conversations.filter((x) => x.id !== a.id);
      const current = state.current && state.current.id === a.id ? null : state.current;
      return { ...state, conversations, current };
    }
    case "generationBegin":
      return { ...state, stream: newStream(a.start), editingId: null, error: null };
    case "generationJob": {
      const s = ownStream(state, a.localId);
      return s && s.jobId === null ? { ...state, stream: { ...s, jobId: a.jobId } } : state;
    }
    case "generationRejected":
      return ownStream(state, a.localId) ? { ...state, stream: null, error: a.error } : state;
    case "generationEvents":
      return ownStream(state, a.localId) ? applyEvents(state, a.events, a.at) : state;
    case "stopRequested":
      return state.stream ? { ...state, stream: { ...state.stream, stopRequested: true } } : state;
    case "editStart":
      return { ...state, editingId: a.messageId };
    case "editCancel":
      return { ...state, editingId: null };
    case "error":
      return { ...state, error: a.error };
    case "notice":
      return { ...state, notice: a.notice };
    case "historyNotice":
      return { ...state, historyNotice: a.notice };
    default: {
      const unhandled: never = a;
      return unhandled;
    }
  }
}
