// The IPC client's contract with src-tauri: command names, argument keys, the event Channel, and
// errors always arriving as IpcError.
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { GenerationEvent } from "../generated/ipc";

const { invoke, FakeChannel } = vi.hoisted(() => {
  class FakeChannel<T> {
    onmessage: (m: T) => void = () => undefined;
  }
  return { invoke: vi.fn(), FakeChannel };
});
vi.mock("@tauri-apps/api/core", () => ({ invoke, Channel: FakeChannel, isTauri: () => true }));

const engine = await import("./engine");

beforeEach(() => {
  invoke.mockReset();
  invoke.mockResolvedValue(null);
});

describe("commands", () => {
  it("use the snake_case names and camelCase keys of the contract", async () => {
    const settings = { temperature: 0, topP: 0.9, seed: 3, maxTokens: 8, thinking: true, thinkingEffort: "high" as const, toolServers: [], toolsOff: [], toolChoice: "auto" as const };
    await engine.currentModel();
    await engine.openModel(null);
    await engine.openModel("/models/k3");
    await engine.pickModelFolder();
    await engine.openLink("https://example.org/");
    await engine.historyNotice();
    await engine.listConversations();
    await engine.createConversation();
    await engine.getConversation(4);
    await engine.updateConversation({ id: 4, title: "T", systemPrompt: "S", settings });
    await engine.deleteConversation(4);
    await engine.exportConversation(4, "json");
    await engine.saveExport(4, "markdown");
    await engine.cancelGeneration(12);
    expect(invoke.mock.calls).toEqual([
      ["current_model", {}],
      ["open_model", { path: null }],
      ["open_model", { path: "/models/k3" }],
      ["pick_model_folder", {}],
      ["open_link", { url: "https://example.org/" }],
      ["history_notice", {}],
      ["list_conversations", {}],
      ["create_conversation", {}],
      ["get_conversation", { id: 4 }],
      ["update_conversation", { id: 4, title: "T", systemPrompt: "S", settings }],
      ["delete_conversation", { id: 4 }],
      ["export_conversation", { id: 4, format: "json" }],
      ["save_export", { id: 4, format: "markdown" }],
      ["cancel_generation", { jobId: 12 }],
    ]);
  });

  it("call the tool commands with the keys the tools commands take", async () => {
    const server = {
      id: "", name: "Files", transport: { kind: "stdio" as const, command: "npx", args: ["-y"], env: [], workingDir: null },
      enabled: true, timeoutSeconds: 60, key: null, clearKey: false,
    };
    await engine.toolServers();
    await engine.saveToolServer(server);
    await engine.removeToolServer("files");
    await engine.listServerTools("files");
    await engine.revokeToolPermission("files", "read_text_file");
    await engine.pendingToolCalls(4);
    await engine.decideToolCall(4, "call_1_0", "alwaysAllow");
    await engine.stopToolCall(4);
    expect(invoke.mock.calls).toEqual([
      ["tool_servers", {}],
      ["save_tool_server", { server }],
      ["remove_tool_server", { id: "files" }],
      ["list_server_tools", { id: "files" }],
      ["revoke_tool_permission", { id: "files", tool: "read_text_file" }],
      ["pending_tool_calls", { conversationId: 4 }],
      ["decide_tool_call", { conversationId: 4, callId: "call_1_0", decision: "alwaysAllow" }],
      ["stop_tool_call", { conversationId: 4 }],
    ]);
  });

  it("call the local API commands with the settings under `settings`", async () => {
    const settings = { enabled: true, port: 8001, apiKey: "k", lan: false, lanAddress: "" };
    await engine.apiStatus();
    await engine.apiStart(settings);
    await engine.apiStop();
    expect(invoke.mock.calls).toEqual([
      ["api_status", {}],
      ["api_start", { settings }],
      ["api_stop", {}],
    ]);
  });

  it("call the queue commands with the Rust parameter names", async () => {
    await engine.queueState();
    await engine.queueAdd("a\nb", "lines");
    await engine.queueCancel(3);
    await engine.queuePause();
    await engine.queueResume();
    await engine.queueCancelAll();
    await engine.queueClearFinished();
    await engine.queueExport("csv");
    await engine.queueSaveExport("jsonl");
    expect(invoke.mock.calls).toEqual([
      ["queue_state", {}],
      ["queue_add", { text: "a\nb", format: "lines" }],
      ["queue_cancel", { id: 3 }],
      ["queue_pause", {}],
      ["queue_resume", {}],
      ["queue_cancel_all", {}],
      ["queue_clear_finished", {}],
      ["queue_export", { format: "csv" }],
      ["queue_save_export", { format: "jsonl" }],
    ]);
  });

  it("call the backend commands with the Rust parameter names", async () => {
    const backend = { name: "GPU box", baseUrl: "http://10.0.0.5:8000/v1", apiKey: "", model: "kimi-k3" };
    await engine.listBackends();
    await engine.addBackend(backend);
    await engine.listRemoteModels("http://10.0.0.5:8000/v1", "");
    await engine.testBackend("gpu-box");
    await engine.removeBackend("gpu-box");
    await engine.setConversationBackend(4, "gpu-box");
    await engine.setConversationBackend(4, null);
    expect(invoke.mock.calls).toEqual([
      ["list_backends", {}],
      ["add_backend", { backend }],
      ["list_remote_models", { baseUrl: "http://10.0.0.5:8000/v1", apiKey: "" }],
      ["test_backend", { id: "gpu-box" }],
      ["remove_backend", { id: "gpu-box" }],
      ["set_conversation_backend", { id: 4, backend: "gpu-box" }],
      ["set_conversation_backend", { id: 4, backend: null }],
    ]);
  });

  it("call the performance and log commands with the Rust parameter names", async () => {
    await engine.performanceSettings();
    await engine.applyPerformance({ compute: 2, io: null });
    await engine.readLog(500);
    expect(invoke.mock.calls).toEqual([
      ["performance_settings", {}],
      ["apply_performance", { threads: { compute: 2, io: null } }],
      ["read_log", { lines: 500 }],
    ]);
  });

  it("start generations with a Channel whose messages reach the callback", async () => {
    invoke.mockResolvedValue(77);
    const got: GenerationEvent[] = [];
    const job = await engine.startGeneration({ kind: "send", conversationId: 1, text: "hi" }, (e) => got.push(e));
    await engine.startGeneration({ kind: "regenerate", conversationId: 1 }, () => undefined);
    await engine.startGeneration({ kind: "edit", conversationId: 1, messageId: 5, text: "new" }, () => undefined);
    expect(job).toBe(77);
    const [send, regen, edit] = invoke.mock.calls;
    expect(send![0]).toBe("send_message");
    expect(Object.keys(send![1]).sort()).toEqual(["conversationId", "onEvent", "text"]);
    expect(send![1].onEvent).toBeInstanceOf(FakeChannel);
    expect(regen![0]).toBe("regenerate");
    expect(Object.keys(regen![1]).sort()).toEqual(["conversationId", "onEvent"]);
    expect(edit![0]).toBe("edit_message");
    expect(edit![1]).toMatchObject({ conversationId: 1, messageId: 5, text: "new" });
    const ev: GenerationEvent = { type: "queued", jobId: 77, position: 0 };
    send![1].onEvent.onmessage(ev);
    expect(got).toEqual([ev]);
  });
});

describe("errors", () => {
  it("pass an IpcError through unchanged", async () => {
    const err = { code: "MODEL_FOLDER", message: "No config.json in /x", details: "ENOENT" };
    invoke.mockRejectedValue(err);
    await expect(engine.openModel("/x")).rejects.toEqual(err);
  });

  it("turn a plain string rejection (unknown command, panic) into INTERNAL", async () => {
    invoke.mockRejectedValue("command open_model not found");
    await expect(engine.openModel("/x")).rejects.toEqual({
      code: "INTERNAL",
      message: "command open_model not found",
      details: null,
    });
  });

  it("map an unknown code to INTERNAL but keep the message", () => {
    expect(engine.toIpcError({ code: "WHAT", message: "m" })).toEqual({ code: "INTERNAL", message: "m", details: null });
  });
});
