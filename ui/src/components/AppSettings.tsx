// The app's Settings (Ctrl/⌘+,): a sheet over the chat with one section per area. Each section owns
// its own state and commands; this file is the frame (section list, close on Esc or the button).
import { useEffect, useState } from "preact/hooks";
import { BackendSettings } from "./BackendSettings";
import { LocalApiSettings } from "./LocalApiSettings";
import { MemorySettings } from "./MemorySettings";
import { NewChatSettings } from "./NewChatSettings";
import { AppearanceSettings } from "./AppearanceSettings";
import { DiagnosticsSettings } from "./DiagnosticsSettings";
import { ModelFolderSettings } from "./ModelFolderSettings";
import { PerformanceSettings } from "./PerformanceSettings";
import { ToolSettings } from "./ToolSettings";
import type { ModelInfo } from "../generated/ipc";

type Section =
  | "memory"
  | "performance"
  | "modelFolder"
  | "newChats"
  | "appearance"
  | "localApi"
  | "backends"
  | "tools"
  | "diagnostics"
  | "shortcuts";

const SECTIONS: { id: Section; label: string }[] = [
  { id: "memory", label: "Memory" },
  { id: "performance", label: "Performance" },
  { id: "modelFolder", label: "Model folder" },
  { id: "newChats", label: "New chats" },
  { id: "appearance", label: "Appearance" },
  { id: "localApi", label: "Local API" },
  { id: "backends", label: "Backends" },
  { id: "tools", label: "Tools" },
  { id: "diagnostics", label: "Diagnostics" },
  { id: "shortcuts", label: "Shortcuts" },
];

const SHORTCUTS: [string, string][] = [
  ["Enter", "Send the message"],
  ["Shift+Enter", "New line in the message"],
  ["Esc", "Stop the reply, or cancel an edit"],
  ["Ctrl/⌘+N or Ctrl/⌘+Shift+O", "New chat"],
  ["Ctrl/⌘+,", "Open or close Settings"],
  ["Ctrl/⌘+1, 2, 3", "Chat, Memory, Disk"],
];

export function AppSettings({
  onClose,
  onModel,
  onOpenFolder,
  initial = "memory",
}: {
  onClose(): void;
  onModel?(m: ModelInfo): void;
  onOpenFolder?(): void;
  initial?: Section;
}) {
  const [section, setSection] = useState<Section>(initial);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      e.preventDefault();
      onClose();
    };
    // Capture: Esc closes Settings before it reaches the chat (where it would stop a reply).
    window.addEventListener("keydown", onKey, true);
    return () => window.removeEventListener("keydown", onKey, true);
  }, [onClose]);

  return (
    <div class="app-settings" role="dialog" aria-modal="true" aria-label="Settings" data-testid="app-settings">
      <nav class="app-settings-nav" aria-label="Settings sections">
        <h1>Settings</h1>
        {SECTIONS.map((s) => (
          <button key={s.id} type="button" class={s.id === section ? "current" : ""} aria-current={s.id === section} onClick={() => setSection(s.id)}>
            {s.label}
          </button>
        ))}
      </nav>
      <div class="app-settings-body">
        <button type="button" class="app-settings-close" aria-label="Close settings" onClick={onClose}>
          Close
        </button>
        {section === "memory" ? (
          <MemorySettings onApplied={onModel} />
        ) : section === "performance" ? (
          <PerformanceSettings onApplied={onModel} />
        ) : section === "modelFolder" ? (
          <ModelFolderSettings onOpenFolder={onOpenFolder} />
        ) : section === "newChats" ? (
          <NewChatSettings />
        ) : section === "appearance" ? (
          <AppearanceSettings />
        ) : section === "localApi" ? (
          <LocalApiSettings />
        ) : section === "backends" ? (
          <BackendSettings />
        ) : section === "tools" ? (
          <ToolSettings />
        ) : section === "diagnostics" ? (
          <DiagnosticsSettings />
        ) : (
          <Shortcuts />
        )}
      </div>
    </div>
  );
}

function Shortcuts() {
  return (
    <section class="settings-section" aria-labelledby="shortcuts-title">
      <h2 id="shortcuts-title">Keyboard shortcuts</h2>
      <table class="shortcuts">
        <tbody>
          {SHORTCUTS.map(([keys, what]) => (
            <tr key={keys}>
              <th scope="row">
                <kbd>{keys}</kbd>
              </th>
              <td>{what}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
