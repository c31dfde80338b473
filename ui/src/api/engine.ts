// Typed client for the k3-desktop IPC commands.
// Owns: the ONLY import of @tauri-apps/api in the UI; command names (snake_case) and argument shapes
// (camelCase) as declared in src-tauri; turning every rejection into an IpcError; the generation Channel.
// Must not: hold UI state or format anything for display.
// Easy to break: argument keys must match the Rust command parameters exactly (Tauri converts
// snake_case parameters to camelCase keys); engine.test.ts pins each name and key.
// Outside Tauri (plain browser, for UI work and browser tests) the same calls go to an in-memory
// mock backend, loaded lazily so it stays out of the main chunk.
import { Channel, invoke, isTauri } from "@tauri-apps/api/core";
import type {
  Message,
  PendingToolCall,
  ServerToolInfo,
  ToolDecision,
  ToolServer,
  ToolServerInput,
  Conversation,
  ConversationSummary,
  ExportFile,
  ExportFormat,
  GenerationEvent,
  HistoryNotice,
  IpcError,
  ModelInfo,
  ModelStatus,
  MachineView,
  PresetRow,
  SamplingSettings,
  ApiSettings,
  ApiStatus,
  ChatDefaults,
  ChatDefaultsView,
  ModelFolderView,
  VerifyOutcome,
  VerifyProgress,
  Dashboard,
  DriveUsage,
  MemoryApplied,
  MemoryChoice,
  MemoryView,
  Placement,
  PlanPreview,
  ReplanProgressEvent,
  SetupAdvance,
  SetupChoice,
  SetupEvent,
  SetupSettings,
  SetupStatus,
  SpeedSummary,
  PerformanceView,
  SpeculationChoice,
  ResumeChoice,
  Threads,
  LogTail,
  BackendView,
  BackendTest,
  NewBackend,
  QueueState,
  QueueImportFormat,
  QueueExportFormat,
} from "../generated/ipc";

/** Where commands go: the Tauri core, or the browser mock. */
export interface Transport {
  call<T>(cmd: string, args: Record<string, unknown>): Promise<T>;
  /** Invoke a generation command with a fresh event channel bound to `onEvent`. */
  generate(cmd: GenerationCommand, args: Record<string, unknown>, onEvent: (e: GenerationEvent) => void): Promise<number>;
  /** Invoke a long job command (setup, replan) with a fresh event channel bound to `onEvent`. */
  stream<T, E = SetupEvent>(cmd: StreamCommand, args: Record<string, unknown>, onEvent: (e: E) => void): Promise<T>;
}

export type StreamCommand = "setup_speed_test" | "setup_run" | "apply_memory" | "verify_model_folder";

export type GenerationCommand = "send_message" | "regenerate" | "edit_message" | "continue_reply";

const tauriTransport: Transport = {
  call: (cmd, args) => invoke(cmd, args),
  generate(cmd, args, onEvent) {
    const channel = new Channel<GenerationEvent>();
    channel.onmessage = onEvent;
    return invoke<number>(cmd, { ...args, onEvent: channel });
  },
  stream<T, E>(cmd: StreamCommand, args: Record<string, unknown>, onEvent: (e: E) => void) {
    const channel = new Channel<E>();
    channel.onmessage = onEvent;
    return invoke<T>(cmd, { ...args, onEvent: channel });
  },
};

let transport: Transport | null = null;
let pending: Promise<Transport> | null = null;

async function getTransport(): Promise<Transport> {
  if (transport) return transport;
  if (inTauri()) return (transport = tauriTransport);
  pending ??= import("./browserMock").then((m) => (transport = m.createMockTransport()));
  return pending;
}

/** Replace the transport (tests, or a custom backend). */
export function setTransport(t: Transport | null): void {
  transport = t;
  pending = null;
}

/** True when running inside the Tauri window (false in a plain browser, where the mock answers). */
export function inTauri(): boolean {
  return isTauri() || "__TAURI_INTERNALS__" in globalThis;
}

/** Every code of the generated `ErrorCode` union: a code added to or removed from the Rust
 *  enum fails to compile here until this table follows. */
const ERROR_CODE_TABLE: Record<IpcError["code"], true> = {
  MODEL_NOT_LOADED: true, MODEL_FOLDER: true, MODEL_CONFIG: true, CHECKPOINT: true, TOKENIZER: true,
  TEMPLATE: true, INVALID_ARGUMENT: true, CONTEXT_LIMIT: true, BUDGET_TOO_SMALL: true, EXPERT_READ: true, REMOTE: true,
  DOWNLOAD: true, TOOL: true, NOT_FOUND: true, HISTORY: true, IO: true, INTERNAL: true,
};
const ERROR_CODES = new Set<string>(Object.keys(ERROR_CODE_TABLE));

/** Any rejection value as an IpcError: the contract says commands reject with one, but a
 *  missing command or a panic in Tauri rejects with a plain string. */
export function toIpcError(err: unknown): IpcError {
  if (err && typeof err === "object") {
    const o = err as Record<string, unknown>;
    if (typeof o.message === "string") {
      const code = typeof o.code === "string" && ERROR_CODES.has(o.code) ? (o.code as IpcError["code"]) : "INTERNAL";
      const details = typeof o.details === "string" ? o.details : null;
      return { code, message: o.message, details };
    }
  }
  return { code: "INTERNAL", message: typeof err === "string" ? err : String(err), details: null };
}

async function call<T>(cmd: string, args: Record<string, unknown> = {}): Promise<T> {
  const t = await getTransport();
  try {
    return await t.call<T>(cmd, args);
  } catch (e) {
    throw toIpcError(e);
  }
}

async function generate(
  cmd: GenerationCommand,
  args: Record<string, unknown>,
  onEvent: (e: GenerationEvent) => void,
): Promise<number> {
  const t = await getTransport();
  try {
    return await t.generate(cmd, args, onEvent);
  } catch (e) {
    throw toIpcError(e);
  }
}

// ---- model ----
export const currentModel = () => call<ModelStatus>("current_model");
export const openModel = (path: string | null) => call<ModelInfo>("open_model", { path });
export const pickModelFolder = () => call<string | null>("pick_model_folder");
/** Opens an https: link in the system browser (the app refuses anything else). */
export const openLink = (url: string) => call<null>("open_link", { url });

// ---- history ----
/** What the history's startup check found (a damaged file set aside, a newer app's file), or null. */
export const historyNotice = () => call<HistoryNotice | null>("history_notice");
export const listConversations = () => call<ConversationSummary[]>("list_conversations");
export const createConversation = () => call<Conversation>("create_conversation");
/** Settings › New chats: what new conversations start with, and the model's own defaults. */
export const chatDefaults = () => call<ChatDefaultsView>("chat_defaults");
export const setChatDefaults = (defaults: ChatDefaults) => call<ChatDefaults>("set_chat_defaults", { defaults });
export const getConversation = (id: number) => call<Conversation>("get_conversation", { id });
export const deleteConversation = (id: number) => call<null>("delete_conversation", { id });
export interface ConversationUpdate {
  id: number;
  title: string;
  systemPrompt: string;
  settings: SamplingSettings;
}
export const updateConversation = (u: ConversationUpdate) =>
  call<Conversation>("update_conversation", { id: u.id, title: u.title, systemPrompt: u.systemPrompt, settings: u.settings });
export const exportConversation = (id: number, format: ExportFormat) =>
  call<ExportFile>("export_conversation", { id, format });
export const saveExport = (id: number, format: ExportFormat) => call<string | null>("save_export", { id, format });

// ---- generation ----
/** What to generate; each variant maps to one command. */
export type GenerationRequest =
  | { kind: "send"; conversationId: number; text: string }
  | { kind: "regenerate"; conversationId: number }
  | { kind: "edit"; conversationId: number; messageId: number; text: string }
  | { kind: "continue"; conversationId: number };

/** Start a generation; events arrive on `onEvent` in order. Resolves to the job id. */
export function startGeneration(req: GenerationRequest, onEvent: (e: GenerationEvent) => void): Promise<number> {
  switch (req.kind) {
    case "send":
      return generate("send_message", { conversationId: req.conversationId, text: req.text }, onEvent);
    case "regenerate":
      return generate("regenerate", { conversationId: req.conversationId }, onEvent);
    case "edit":
      return generate(
        "edit_message",
        { conversationId: req.conversationId, messageId: req.messageId, text: req.text },
        onEvent,
      );
    case "continue":
      return generate("continue_reply", { conversationId: req.conversationId }, onEvent);
  }
}

export const cancelGeneration = (jobId: number) => call<boolean>("cancel_generation", { jobId });

async function stream<T, E = SetupEvent>(cmd: StreamCommand, args: Record<string, unknown>, onEvent: (e: E) => void): Promise<T> {
  const t = await getTransport();
  try {
    return await t.stream<T, E>(cmd, args, onEvent);
  } catch (e) {
    throw toIpcError(e);
  }
}

// ---- setup wizard ----
export const setupStatus = () => call<SetupStatus>("setup_status");
export const setupExamine = (store: string | null) => call<MachineView>("setup_examine", { store });
/** A choice made on a screen; fields not given stay as they are. */
export const setupChoose = (choice: Partial<SetupChoice>) =>
  call<SetupSettings>("setup_choose", {
    choice: { storeDir: null, trunkDir: null, preset: null, confirm: null, backTo: null, ...choice },
  });
export const setupNext = () => call<SetupAdvance>("setup_next");
export const setupForecast = () => call<PresetRow[]>("setup_forecast");
export const setupPause = () => call<boolean>("setup_pause");
export const setupAdopt = (path: string) => call<SetupSettings>("setup_adopt", { path });
export const setupToken = (token: string) => call<null>("setup_token", { token });
export const setupDismiss = (dismissed: boolean) => call<SetupStatus>("setup_dismiss", { dismissed });
export const setupSpeedTest = (dir: string, onEvent: (e: SetupEvent) => void) =>
  stream<SpeedSummary>("setup_speed_test", { dir }, onEvent);
/** Runs download → pack → first load from the saved step; null when paused. */
export const setupRun = (onEvent: (e: SetupEvent) => void) => stream<ModelInfo | null>("setup_run", {}, onEvent);

// ---- local API (Settings › Local API) ----
export const apiStatus = () => call<ApiStatus>("api_status");
export const apiStart = (settings: ApiSettings) => call<ApiStatus>("api_start", { settings });
export const apiStop = () => call<ApiStatus>("api_stop");

// ---- the overnight queue (the Queue tab) ----
export const queueState = () => call<QueueState>("queue_state");
/** Adds the prompts in `text` (one per line, JSONL or CSV) with the new-chat settings. */
export const queueAdd = (text: string, format: QueueImportFormat) => call<QueueState>("queue_add", { text, format });
export const queuePause = () => call<QueueState>("queue_pause");
export const queueResume = () => call<QueueState>("queue_resume");
export const queueCancel = (id: number) => call<QueueState>("queue_cancel", { id });
export const queueCancelAll = () => call<QueueState>("queue_cancel_all");
export const queueClearFinished = () => call<QueueState>("queue_clear_finished");
export const queueExport = (format: QueueExportFormat) => call<ExportFile>("queue_export", { format });
/** Asks where to save the answers; the path written, or null when the dialog was cancelled. */
export const queueSaveExport = (format: QueueExportFormat) => call<string | null>("queue_save_export", { format });

// ---- remote backends (Settings › Backends; a conversation's "Answered by") ----
export const listBackends = () => call<BackendView[]>("list_backends");
/** Adds an endpoint; its key goes to the OS keyring (or a user-only file), never the history. */
export const addBackend = (backend: NewBackend) => call<BackendView>("add_backend", { backend });
export const removeBackend = (id: string) => call<null>("remove_backend", { id });
/** The model ids an endpoint lists, before it is added (nothing is saved). */
export const listRemoteModels = (baseUrl: string, apiKey: string) => call<string[]>("list_remote_models", { baseUrl, apiKey });
/** Lists the endpoint's models and times one short reply. */
export const testBackend = (id: string) => call<BackendTest>("test_backend", { id });
/** Who answers conversation `id`: a backend's id, or null for the local engine. */
export const setConversationBackend = (id: number, backend: string | null) =>
  call<Conversation>("set_conversation_backend", { id, backend });

// ---- tools (Settings › Tools; the calls of a reply, each run only when the user allows it) ----
export const toolServers = () => call<ToolServer[]>("tool_servers");
/** Adds (empty id) or changes a server; an HTTP server's key goes to the key vault. */
export const saveToolServer = (server: ToolServerInput) => call<ToolServer>("save_tool_server", { server });
export const removeToolServer = (id: string) => call<null>("remove_tool_server", { id });
/** Starts or reaches the server and lists its tools. */
export const listServerTools = (id: string) => call<ServerToolInfo[]>("list_server_tools", { id });
export const revokeToolPermission = (id: string, tool: string) => call<ToolServer>("revoke_tool_permission", { id, tool });
/** The calls of the conversation's last reply that wait for the user. */
export const pendingToolCalls = (conversationId: number) => call<PendingToolCall[]>("pending_tool_calls", { conversationId });
/** Runs or denies one call; the saved tool message. */
export const decideToolCall = (conversationId: number, callId: string, decision: ToolDecision) =>
  call<Message>("decide_tool_call", { conversationId, callId, decision });
/** Stops the conversation's running call (its server is killed). */
export const stopToolCall = (conversationId: number) => call<boolean>("stop_tool_call", { conversationId });

// ---- dashboards (the Memory and Disk tabs; asked only while one is on screen) ----
/** One reading, with the timeline's tokens after `after` (the `lastSeq` of the previous reading). */
export const dashboard = (after: number) => call<Dashboard>("dashboard", { after });
export const diskUsage = () => call<DriveUsage[]>("disk_usage");

// ---- memory (Settings › Memory) ----
export const memorySettings = () => call<MemoryView>("memory_settings");
/** `choice`'s plan at `contextLength` positions, its layers placed by `placement` (null: those in force). */
export const planPreview = (choice: MemoryChoice, contextLength: number | null = null, placement: Placement | null = null) =>
  call<PlanPreview>("plan_preview", { choice, contextLength, placement });
/** Every preset's plan at `contextLength` positions, placed by `placement` (null: the one in force). */
export const memoryWhatIf = (contextLength: number, placement: Placement | null = null) =>
  call<MemoryView>("memory_what_if", { contextLength, placement });
/** Applies `choice` (and `contextLength` and `placement` when given) after the reply in progress,
 * without a restart; progress while layers are pinned. */
export const applyMemory = (
  choice: MemoryChoice,
  onEvent: (e: ReplanProgressEvent) => void,
  contextLength: number | null = null,
  placement: Placement | null = null,
) => stream<MemoryApplied, ReplanProgressEvent>("apply_memory", { choice, contextLength, placement }, onEvent);

// ---- diagnostics (Settings › Diagnostics; no prompts, no secrets) ----
export const diagnostics = () => call<string>("diagnostics");
/** The last `lines` entries of the app's log. */
export const readLog = (lines: number) => call<LogTail>("read_log", { lines });

// ---- performance (Settings › Performance) ----
export const performanceSettings = () => call<PerformanceView>("performance_settings");
/** Saves `threads` and reopens the model with them (after the reply in progress). */
export const applyPerformance = (threads: Threads) => call<ModelInfo>("apply_performance", { threads });
/** Saves the speculative decoding choice; the next reply decodes with it (no reopen). */
export const setSpeculation = (choice: SpeculationChoice) => call<null>("set_speculation", { choice });
/** Saves how many conversations keep their engine state (the oldest beyond go). */
export const setResume = (choice: ResumeChoice) => call<null>("set_resume", { choice });
/** Opens the Memory or Disk tab in its own window. */
export const openDashboardWindow = (view: "memory" | "disk") => call<null>("open_dashboard_window", { view });

// ---- model folder (Settings › Model folder) ----
export const modelFolder = () => call<ModelFolderView>("model_folder");
/** Hashes every file of the model in use again; progress while it runs. */
export const verifyModelFolder = (onEvent: (e: VerifyProgress) => void) => stream<VerifyOutcome, VerifyProgress>("verify_model_folder", {}, onEvent);
export const stopVerify = () => call<null>("stop_verify");
