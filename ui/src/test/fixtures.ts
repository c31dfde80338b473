// Builders for IPC values used by the tests (shapes from src/generated/ipc.ts).
import type { Conversation, Message, MessageStats } from "../generated/ipc";

export function stats(over: Partial<MessageStats> = {}): MessageStats {
  return {
    promptTokens: 1234,
    prefilledTokens: 1200,
    outputTokens: 512,
    timeToFirstTokenMs: 83_400,
    totalMs: 2_950_000,
    secondsPerToken: 5.6,
    ioShare: 1.34,
    trueHitRate: 0.312,
    bytesRead: 26_512_345_678,
    finishReason: "stop",
    seed: 7,
    model: "Kimi-K3",
    remoteHost: null,
    contextLength: 4096,
    contextNearlyFull: false,
    ...over,
  };
}

export function message(over: Partial<Message> & Pick<Message, "id" | "role">): Message {
  return {
    content: "", think: null, status: "complete", stats: null, failure: null, toolCalls: [], toolAnswer: null,
    createdAt: 1_700_000_000_000, ...over,
  };
}

export function conversation(over: Partial<Conversation> = {}): Conversation {
  return {
    id: 1,
    title: "Chat",
    systemPrompt: "",
    settings: {
      temperature: 0, topP: 1, seed: 1, maxTokens: 100, thinking: false, thinkingEffort: null,
      toolServers: [], toolsOff: [], toolChoice: "auto",
    },
    createdAt: 1,
    updatedAt: 1,
    backend: null,
    messages: [],
    ...over,
  };
}
