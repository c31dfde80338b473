// In-memory stand-in for src-tauri, used only when the page runs outside Tauri (UI work in a plain
// browser, browser tests). Owns: a fake demo model, conversations kept in memory, and a generation
// that emits the same GenerationEvent sequence as the engine (queued, started, prefill, tokens,
// stats, finished/failed) at about 1000 tokens per second (like the demo model), honouring cancel.
// Also owns the browser tests' hook (`globalThis.__k3Mock`, see MockHook): scripted replies and the
// links open_link was asked to open. Nothing in the app defines it, and Tauri never loads this file.
// Must not: import @tauri-apps/api, or be imported by anything but engine.ts (it is a lazy chunk).
import type {
  QueueEntry,
  QueueState,
  ApiStatus,
  BackendView,
  NewBackend,
  Conversation,
  ConversationSummary,
  GenerationEvent,
  IpcError,
  Message,
  MessageStats,
  ModelInfo,
  SamplingSettings,
  ToolServer,
  ToolServerInput,
} from "../generated/ipc";
import type { GenerationCommand, Transport } from "./engine";

const DEMO: ModelInfo = {
  path: "(bundled demo)", name: "k3-tiny-demo", isDemo: true, layers: 4, hiddenSize: 64, vocabSize: 163840,
  routedExperts: 16, expertsPerToken: 4, checkpointBytes: 41_943_040, memory: "all resident (0.04 GB)", loadMs: 120,
};
const DEFAULTS: SamplingSettings = {
  temperature: 0.6, topP: 0.95, seed: 42, maxTokens: 1024, thinking: false, thinkingEffort: null,
  toolServers: [], toolsOff: [], toolChoice: "auto",
};
const WORDS = "the expert router picks sixteen of many experts per token while **trunk** layers stay pinned in memory and `reads` stream from disk".split(" ");

/** What a browser test (ui/tests/browser.mjs) puts at `globalThis.__k3Mock` before the page loads:
 *  each generation takes the first of `replies`, when there is one, as its exact reply text (streamed
 *  in pieces, finished with reason "stop"); open_link appends each URL it is given to `opened`;
 *  `conversations`, when given, are the saved history the app starts with. */
export interface MockHook {
  replies: string[];
  opened: string[];
  conversations?: Conversation[];
}

function testHook(): MockHook | null {
  const h = (globalThis as { __k3Mock?: unknown }).__k3Mock as Partial<MockHook> | undefined;
  return h && Array.isArray(h.replies) && Array.isArray(h.opened) ? (h as MockHook) : null;
}

function fail(code: IpcError["code"], message: string): IpcError {
  return { code, message, details: null };
}

export function createMockTransport(): Transport {
  const convs = new Map<number, Conversation>();
  let nextId = 1;
  let nextJob = 1;
  const cancelled = new Set<number>();
  const now = () => Date.now();
  let backends: BackendView[] = [];
  let toolServers: ToolServer[] = [];
  let apiStatus: ApiStatus = {
    settings: { enabled: false, port: 8000, apiKey: "", lan: false, lanAddress: "" },
    running: false, baseUrl: null, generationsInFlight: 0, requests: 0, log: [], problem: null,
  };

  // The preview has no engine: queued prompts wait, and the queue says why.
  let queue: QueueState = {
    items: [], waiting: 0, running: 0, done: 0, failed: 0, cancelled: 0, paused: false,
    halted: null, width: 1, etaSeconds: null, awakeRefused: null, unavailable: null,
  };
  const queueAdd = (text: string, format: string): QueueState => {
    if (format !== "lines") throw fail("INVALID_ARGUMENT", "the browser preview adds typed prompts only");
    const prompts = text.split("\n").map((l) => l.trim()).filter((l) => l !== "");
    if (prompts.length === 0) throw fail("INVALID_ARGUMENT", "there is no prompt to add");
    const items: QueueEntry[] = prompts.map((prompt, i) => {
      const id = queue.items.length + i + 1;
      return {
        id, label: String(id), prompt, system: null, status: "waiting", prefillDone: 0, prefillTotal: 0, tokens: 0,
        maxTokens: DEFAULTS.maxTokens, seconds: 0, secondsPerToken: null, text: "", error: null, finish: null,
      };
    });
    const all = [...queue.items, ...items];
    return (queue = { ...queue, items: all, waiting: all.length, halted: "the browser preview has no model; the queue runs in the desktop app" });
  };

  for (const c of testHook()?.conversations ?? []) {
    convs.set(c.id, c);
    nextId = Math.max(nextId, c.id + 1, ...c.messages.map((m) => m.id + 1));
  }

  const get = (id: unknown): Conversation => {
    const c = convs.get(Number(id));
    if (!c) throw fail("NOT_FOUND", `Conversation ${String(id)} does not exist.`);
    return c;
  };
  const summary = (c: Conversation): ConversationSummary => ({
    id: c.id, title: c.title, updatedAt: c.updatedAt, messageCount: c.messages.length, backend: c.backend,
  });
  const newMessage = (role: Message["role"], content: string): Message => ({
    id: nextId++, role, content, think: null, status: "complete", stats: null, failure: null, toolCalls: [], toolAnswer: null, createdAt: now(),
  });

  const commands: Record<string, (a: Record<string, unknown>) => unknown> = {
    current_model: () => ({ model: DEMO, error: null }),
    open_model: (a) => {
      if (a.path === null) return DEMO;
      throw fail("MODEL_FOLDER", `No config.json in ${String(a.path)} (browser mock: only the demo model exists).`);
    },
    pick_model_folder: () => null,
    history_notice: () => null,
    // The browser preview opens on the chat: the wizard needs a drive and a network.
    setup_status: () => ({
      wizard: false,
      running: false,
      settings: {
        step: "welcome", repo: "moonshotai/Kimi-K3", storeDir: null, trunkDir: null, preset: null, speed: null,
        overrides: [], dismissed: true, adopted: false,
      },
    }),
    // The browser preview has no network server: the Local API section shows it off.
    api_status: () => apiStatus,
    api_start: (a) => {
      apiStatus = { ...apiStatus, settings: a.settings as ApiStatus["settings"], problem: { kind: "failed", message: "the browser preview cannot listen on a port" } };
      return apiStatus;
    },
    api_stop: () => (apiStatus = { ...apiStatus, running: false, problem: null }),
    queue_state: () => queue,
    queue_add: (a) => queueAdd(String(a.text), String(a.format)),
    queue_pause: () => (queue = { ...queue, paused: true }),
    queue_resume: () => (queue = { ...queue, paused: false }),
    queue_cancel: (a) => {
      const items = queue.items.map((i) => (i.id === Number(a.id) && i.status === "waiting" ? { ...i, status: "cancelled" as const } : i));
      const waiting = items.filter((i) => i.status === "waiting").length;
      return (queue = { ...queue, items, waiting, cancelled: items.length - waiting });
    },
    queue_cancel_all: () => {
      const items = queue.items.map((i) => ({ ...i, status: "cancelled" as const }));
      return (queue = { ...queue, items, waiting: 0, cancelled: items.length });
    },
    queue_clear_finished: () => {
      const items = queue.items.filter((i) => i.status === "waiting");
      return (queue = { ...queue, items, cancelled: 0 });
    },
    queue_export: (a) => ({ fileName: `k3-queue-answers.${String(a.format)}`, content: "" }),
    queue_save_export: (a) => `/tmp/k3-queue-answers.${String(a.format)}`,
    list_conversations: () => [...convs.values()].sort((x, y) => y.updatedAt - x.updatedAt).map(summary),
    create_conversation: () => {
      const c: Conversation = {
        id: nextId++, title: "New chat", systemPrompt: "", settings: { ...DEFAULTS }, createdAt: now(),
        updatedAt: now(), backend: null, messages: [],
      };
      convs.set(c.id, c);
      return c;
    },
    get_conversation: (a) => get(a.id),
    update_conversation: (a) => {
      const c = get(a.id);
      Object.assign(c, { title: a.title, systemPrompt: a.systemPrompt, settings: a.settings, updatedAt: now() });
      return c;
    },
    delete_conversation: (a) => (get(a.id), convs.delete(Number(a.id)), null),
    export_conversation: (a) => ({ fileName: `chat-${String(a.id)}.${a.format === "json" ? "json" : "md"}`, content: "" }),
    open_link: (a) => (testHook()?.opened.push(String(a.url)), null),
    save_export: (a) => `/tmp/chat-${String(a.id)}.${a.format === "json" ? "json" : "md"}`,
    // The browser preview has no network: backends can be listed and added, never reached.
    list_backends: () => backends,
    add_backend: (a) => {
      const b = a.backend as NewBackend;
      const host = b.baseUrl.replace(/^\w+:\/\//, "").split("/")[0] ?? b.baseUrl;
      const view: BackendView = { id: `b${backends.length + 1}`, name: b.name, baseUrl: b.baseUrl, model: b.model, host, key: b.apiKey ? "userFile" : null };
      backends.push(view);
      return view;
    },
    remove_backend: (a) => ((backends = backends.filter((b) => b.id !== a.id)), null),
    list_remote_models: (a) => {
      throw fail("REMOTE", `cannot reach ${String(a.baseUrl)}: the browser preview has no network`);
    },
    test_backend: (a) => {
      throw fail("REMOTE", `cannot reach ${backends.find((b) => b.id === a.id)?.baseUrl ?? String(a.id)}: the browser preview has no network`);
    },
    set_conversation_backend: (a) => {
      const c = get(a.id);
      c.backend = (a.backend as string | null) ?? null;
      return c;
    },
    // The browser preview starts no programs: servers can be saved, never reached.
    tool_servers: () => toolServers,
    save_tool_server: (a) => {
      const input = a.server as ToolServerInput;
      const id = input.id || input.name.toLowerCase().replace(/[^a-z0-9]+/g, "-") || "server";
      const old = toolServers.find((t) => t.id === id);
      const transport = input.transport.kind === "http" ? { ...input.transport, hasKey: !!input.key } : input.transport;
      const saved: ToolServer = {
        id, name: input.name, transport, enabled: input.enabled, alwaysAllowed: old?.alwaysAllowed ?? [], timeoutSeconds: input.timeoutSeconds,
      };
      toolServers = [...toolServers.filter((t) => t.id !== id), saved];
      return saved;
    },
    remove_tool_server: (a) => ((toolServers = toolServers.filter((t) => t.id !== a.id)), null),
    list_server_tools: (a) => {
      throw fail("TOOL", `could not start tool server ${String(a.id)}: the browser preview starts no programs`);
    },
    revoke_tool_permission: (a) => {
      const server = toolServers.find((t) => t.id === a.id);
      if (!server) throw fail("NOT_FOUND", `no tool server has the id ${String(a.id)}`);
      server.alwaysAllowed = server.alwaysAllowed.filter((t) => t !== a.tool);
      return server;
    },
    pending_tool_calls: () => [],
    decide_tool_call: () => {
      throw fail("TOOL", "the browser preview runs no tools");
    },
    stop_tool_call: () => false,
    cancel_generation: (a) => {
      cancelled.add(Number(a.jobId));
      return true;
    },
  };

  function run(jobId: number, conv: Conversation, userMessage: Message | null, emit: (e: GenerationEvent) => void) {
    const max = conv.settings.maxTokens;
    const promptTokens = 12 + conv.messages.length * 8;
    const t0 = now();
    const scripted = testHook()?.replies.shift();
    let text = "";
    let i = 0;
    const stats = (reason: MessageStats["finishReason"]): MessageStats => ({
      promptTokens, prefilledTokens: promptTokens, outputTokens: i, timeToFirstTokenMs: 40, totalMs: now() - t0,
      secondsPerToken: i > 1 ? (now() - t0) / 1000 / i : null, ioShare: null, trueHitRate: null, bytesRead: 0,
      finishReason: reason, seed: conv.settings.seed, model: DEMO.name, remoteHost: null,
      contextLength: 4096, contextNearlyFull: promptTokens + i >= 0.9 * 4096,
    });
    emit({ type: "queued", jobId, position: 0 });
    emit({ type: "started", jobId, conversationId: conv.id, userMessage });
    emit({ type: "prefillProgress", jobId, done: promptTokens, total: promptTokens });
    // A scripted reply: its exact text, ~200 code points per token event.
    const pieces = typeof scripted === "string" ? (scripted.match(/[\s\S]{1,200}/gu) ?? []) : null;
    const tick = () => {
      const stop = cancelled.has(jobId);
      if (stop || (pieces ? i >= pieces.length : i >= max)) {
        const reason = stop ? "cancelled" : pieces ? "stop" : "length";
        const msg = newMessage("assistant", text);
        msg.status = stop ? "stopped" : "complete";
        msg.stats = stats(reason);
        conv.messages.push(msg);
        conv.updatedAt = now();
        emit({ type: "finished", jobId, reason, message: msg });
        return;
      }
      for (let k = 0; k < 10 && (pieces ? i < pieces.length : i < max); k++, i++) {
        const piece = pieces
          ? pieces[i]!
          : i % 96 === 60
            ? "\n\n```rust\nfn route(scores: &[f32]) -> usize { 0 } // see https://example.com\n```\n\n"
            : (i % 24 === 23 ? "\n\n" : " ") + WORDS[i % WORDS.length];
        text += piece;
        emit({ type: "token", jobId, index: i, text: piece, think: false });
      }
      const elapsedMs = now() - t0;
      emit({ type: "stats", jobId, tokens: i, elapsedMs, secondsPerToken: elapsedMs / 1000 / i, ioShare: null, trueHitRate: null });
      setTimeout(tick, 10);
    };
    setTimeout(tick, 30);
  }

  return {
    async call<T>(cmd: string, args: Record<string, unknown>): Promise<T> {
      const f = commands[cmd];
      if (!f) throw `command ${cmd} not found`;
      return structuredClone(f(args)) as T;
    },
    async stream<T, E>(cmd: string, _args: Record<string, unknown>, _onEvent: (e: E) => void): Promise<T> {
      throw fail("INTERNAL", `${cmd} needs the desktop app: the browser preview has no drive or network`);
    },
    async generate(cmd: GenerationCommand, a: Record<string, unknown>, onEvent: (e: GenerationEvent) => void) {
      const conv = get(a.conversationId);
      const jobId = nextJob++;
      const emit = (e: GenerationEvent) => onEvent(structuredClone(e));
      let userMessage: Message | null = null;
      if (cmd === "send_message") {
        userMessage = newMessage("user", String(a.text));
        conv.messages.push(userMessage);
        if (conv.title === "New chat") conv.title = String(a.text).slice(0, 40);
      } else if (cmd === "edit_message") {
        const idx = conv.messages.findIndex((m) => m.id === a.messageId && m.role === "user");
        if (idx < 0) throw fail("NOT_FOUND", "That message is not in this conversation.");
        conv.messages.splice(idx + 1);
        userMessage = { ...conv.messages[idx]!, content: String(a.text) };
        conv.messages[idx] = userMessage;
      } else if (cmd === "regenerate") {
        const last = conv.messages[conv.messages.length - 1];
        if (!last || last.role !== "assistant") throw fail("INVALID_ARGUMENT", "There is no reply to regenerate.");
        conv.messages.pop();
      } else {
        const last = conv.messages[conv.messages.length - 1];
        if (!last || last.role !== "tool") throw fail("INVALID_ARGUMENT", "the conversation does not end with tool results to answer");
      }
      setTimeout(() => run(jobId, conv, userMessage, emit), 0);
      return jobId;
    },
  };
}
