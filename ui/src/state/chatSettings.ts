// A conversation's settings and the defaults of new chats, the pure half: the forms people edit and
// their checks (a value out of range is reported, never clamped silently). Tested in
// components/NewChatSettings.test.tsx and through the settings panel's tests; the components
// (SettingsPanel.tsx, NewChatSettings.tsx, ConversationTools.tsx) draw, controllers save.
import type { ChatDefaults, Conversation, SamplingSettings, ThinkingEffort, ToolUse } from "../generated/ipc";

/** Which tool servers a conversation offers, which of their tools are off, and whether a reply
 * must call one. */
export interface ToolsForm {
  toolServers: string[];
  toolsOff: string[];
  toolChoice: ToolUse;
}

export interface ChatSettingsForm extends ToolsForm {
  title: string;
  systemPrompt: string;
  temperature: string;
  topP: string;
  seed: string;
  maxTokens: string;
  thinking: boolean;
  /** "" is the model's default. */
  thinkingEffort: ThinkingEffort | "";
}

export function toChatSettingsForm(c: Conversation): ChatSettingsForm {
  const s = c.settings;
  return {
    title: c.title,
    systemPrompt: c.systemPrompt,
    temperature: String(s.temperature),
    topP: String(s.topP),
    seed: String(s.seed),
    maxTokens: String(s.maxTokens),
    thinking: s.thinking,
    thinkingEffort: s.thinkingEffort ?? "",
    toolServers: s.toolServers,
    toolsOff: s.toolsOff,
    toolChoice: s.toolChoice,
  };
}

/** The settings, or the first problem in words. */
export function parseSettings(f: ChatSettingsForm): SamplingSettings | string {
  const num = (v: string) => (v.trim() === "" ? NaN : Number(v));
  const temperature = num(f.temperature);
  const topP = num(f.topP);
  const seed = num(f.seed);
  const maxTokens = num(f.maxTokens);
  if (!(temperature >= 0 && temperature <= 2)) return "Temperature must be between 0 and 2 (0 = greedy).";
  if (!(topP > 0 && topP <= 1)) return "Top-p must be above 0 and at most 1.";
  if (!Number.isSafeInteger(seed) || seed < 0) return "Seed must be a whole number, 0 or more.";
  if (!Number.isSafeInteger(maxTokens) || maxTokens < 1) return "Max tokens must be a whole number, 1 or more.";
  return {
    temperature, topP, seed, maxTokens, thinking: f.thinking, thinkingEffort: f.thinkingEffort || null,
    toolServers: f.toolServers, toolsOff: f.toolsOff, toolChoice: f.toolChoice,
  };
}

export interface NewChatForm {
  temperature: string;
  topP: string;
  maxTokens: string;
  thinking: boolean;
  systemPrompt: string;
  /** A Settings › Backends id; "" is this computer. */
  backend: string;
}

export const toNewChatForm = (d: ChatDefaults): NewChatForm => ({
  temperature: String(d.temperature),
  topP: String(d.topP),
  maxTokens: String(d.maxTokens),
  thinking: d.thinking,
  systemPrompt: d.systemPrompt,
  backend: d.backend ?? "",
});

/** The defaults, or the first problem in words (checked with the conversation form's rules). */
export function parseDefaults(f: NewChatForm): ChatDefaults | string {
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
