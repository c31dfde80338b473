// The chat window's layout and its global shortcuts (Ctrl/⌘+N or Ctrl/⌘+Shift+O new chat, Esc stop or
// cancel an edit). Everything it shows comes from ChatState; everything it does goes through ChatActions.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { type ChatActions, useChat } from "../controllers/chat";
import type { ChatState } from "../state/chat";
import { isRunning } from "../state/stream";
import { APPEARANCE_EVENT, type ThemeChoice, applyTheme, loadTheme, nextTheme } from "../theme";
import { ChatView } from "./ChatView";
import { Composer } from "./Composer";
import { DemoBanner, ModelBar } from "./ModelBar";
import { ErrorRegion, HistoryBanner, PhaseStrip, StatusLine } from "./Notices";
import { AppSettings } from "./AppSettings";
import { BackendPicker, RemoteMarker } from "./BackendPicker";
import { SettingsPanel } from "./SettingsPanel";
import { Sidebar } from "./Sidebar";
import { DriveSpeed } from "./StatsLine";
import { Wizard } from "./wizard/Wizard";
import { useDashboard } from "../controllers/dashboard";
import { useSetupWindow } from "../controllers/setup";
import { DiskTab, MemoryTab } from "./Dashboards";
import { PressureBanner } from "./PressureBanner";
import { QueueView } from "./QueueView";

export type Tab = "chat" | "memory" | "disk" | "queue";
const TABS: { id: Tab; label: string; key: string }[] = [
  { id: "chat", label: "Chat", key: "1" },
  { id: "memory", label: "Memory", key: "2" },
  { id: "disk", label: "Disk", key: "3" },
  { id: "queue", label: "Queue", key: "4" },
];

function useShortcuts(state: ChatState, actions: ChatActions, toggleAppSettings: () => void, setTab: (t: Tab) => void) {
  const ref = useRef(state);
  ref.current = state;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const mod = e.ctrlKey || e.metaKey;
      const key = e.key.toLowerCase();
      if ((mod && !e.shiftKey && key === "n") || (mod && e.shiftKey && key === "o")) {
        e.preventDefault();
        void actions.newChat();
      } else if (mod && !e.shiftKey && TABS.some((t) => t.key === e.key)) {
        e.preventDefault();
        setTab(TABS.find((t) => t.key === e.key)!.id);
      } else if (mod && e.key === ",") {
        e.preventDefault();
        toggleAppSettings();
      } else if (e.key === "Escape" && !e.defaultPrevented) {
        if (ref.current.editingId !== null) actions.cancelEdit();
        else if (isRunning(ref.current.stream)) void actions.stop();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [actions, toggleAppSettings, setTab]);
}

function ThemeToggle() {
  const [theme, setTheme] = useState<ThemeChoice>(loadTheme);
  useEffect(() => {
    if (theme !== loadTheme()) applyTheme(theme);
  }, [theme]);
  // Settings › Appearance changes it too.
  useEffect(() => {
    const follow = () => setTheme(loadTheme());
    window.addEventListener(APPEARANCE_EVENT, follow);
    return () => window.removeEventListener(APPEARANCE_EVENT, follow);
  }, []);
  const label = { system: "System", light: "Light", dark: "Dark" }[theme];
  return (
    <button type="button" class="theme-toggle" aria-label={`Theme: ${label}. Switch theme`} onClick={() => setTheme(nextTheme)}>
      Theme: {label}
    </button>
  );
}

export function App() {
  const [state, actions] = useChat();
  const [settingsOpen, setSettingsOpen] = useState(false);
  const [setup, closeSetup, reopenSetup, driveSpeed] = useSetupWindow();
  const [appSettingsOpen, setAppSettingsOpen] = useState(false);
  const toggleAppSettings = useCallback(() => setAppSettingsOpen((o) => !o), []);
  const closeAppSettings = useCallback(() => setAppSettingsOpen(false), []);
  const [tab, setTab] = useState<Tab>("chat");
  useShortcuts(state, actions, toggleAppSettings, setTab);
  // Dashboards are read only while one is on screen.
  const dashboardShown = tab === "memory" || tab === "disk";
  const [series, dashError] = useDashboard(dashboardShown);
  const busy = isRunning(state.stream);
  const current = state.current;

  const toggleSettings = async () => {
    if (!current) await actions.newChat();
    setSettingsOpen((o) => !o);
  };

  return (
    <div class="app">
      <Sidebar
        conversations={state.conversations}
        currentId={current?.id ?? null}
        busyId={busy ? (state.stream?.conversationId ?? null) : null}
        onNew={() => void actions.newChat()}
        onSelect={(id) => void actions.select(id)}
        onDelete={(id) => void actions.remove(id)}
        onExport={(id, format) => void actions.exportTo(id, format)}
      />
      <main class="main">
        <header class="topbar">
          <ModelBar model={state.model} loading={state.modelLoading} busy={busy} onOpenFolder={() => void actions.openModelFolder()} />
          <button type="button" class="setup-entry" onClick={() => void reopenSetup()}>
            Set up Kimi K3…
          </button>
          <ThemeToggle />
          <button type="button" class="app-settings-entry" aria-label="App settings" title="Settings (Ctrl+,)" onClick={toggleAppSettings}>
            Settings
          </button>
        </header>
        <nav class="tabs" role="tablist" aria-label="Views">
          {TABS.map((t) => (
            <button key={t.id} type="button" role="tab" aria-selected={tab === t.id} class={tab === t.id ? "current" : ""} title={`Ctrl+${t.key}`} onClick={() => setTab(t.id)}>
              {t.label}
            </button>
          ))}
        </nav>
        {/* The demo's words are about this computer's model: a remote chat is not answered by it. */}
        {!(tab === "chat" && current?.backend) && <DemoBanner model={state.model} />}
        <PressureBanner busy={busy} />
        <HistoryBanner notice={state.historyNotice} onDismiss={actions.dismissHistoryNotice} />
        <ErrorRegion error={state.error} onDismiss={actions.dismissError} />
        {tab === "queue" && (
          <div class="dash-body">
            <QueueView />
          </div>
        )}
        {dashboardShown && (
          <div class="dash-body">
            <DriveSpeed.Provider value={driveSpeed}>
              {tab === "memory" ? <MemoryTab series={series} error={dashError} /> : <DiskTab series={series} error={dashError} active={tab === "disk"} />}
            </DriveSpeed.Provider>
          </div>
        )}
        <div class="chat-head" hidden={tab !== "chat"}>
          <h1 class="chat-title">{current?.title ?? "New chat"}</h1>
          <BackendPicker conversation={current ?? null} busy={busy} onChoose={(b) => void actions.setBackend(b)} />
          <button
            type="button"
            aria-label="Conversation settings"
            aria-expanded={settingsOpen && !!current}
            onClick={() => void toggleSettings()}
          >
            Chat settings
          </button>
        </div>
        {tab === "chat" && <RemoteMarker conversation={current ?? null} />}
        <div class="chat-body" hidden={tab !== "chat"}>
          <DriveSpeed.Provider value={driveSpeed}>
            <ChatView state={state} actions={actions} />
          </DriveSpeed.Provider>
          {settingsOpen && current && (
            <SettingsPanel
              conversation={current}
              onSave={actions.saveSettings}
              onInvalid={(message) => actions.reportInvalid(message)}
              onClose={() => setSettingsOpen(false)}
            />
          )}
        </div>
        <div class="strip">
          <PhaseStrip
            stream={state.stream}
            currentId={current?.id ?? null}
            idle={state.modelLoading ? "Loading model…" : state.model ? "Ready" : "No model loaded"}
          />
          <StatusLine notice={state.notice} onDismiss={actions.dismissNotice} />
        </div>
        {/* The queue has its own box for prompts: the chat's would send to a chat not on screen. */}
        <div class="composer-slot" hidden={tab === "queue"}>
          <Composer
            conversationId={current?.id ?? null}
            busy={busy}
            canSend={(!!state.model && !state.modelLoading) || !!current?.backend}
            onSend={actions.send}
            onStop={() => void actions.stop()}
          />
        </div>
      </main>
      {appSettingsOpen && (
        <AppSettings
          onClose={closeAppSettings}
          onModel={actions.modelReady}
          onOpenFolder={() => {
            closeAppSettings();
            void actions.openModelFolder();
          }}
        />
      )}
      {setup && (
        <Wizard
          initial={setup}
          onClose={closeSetup}
          onReady={(model) => {
            actions.modelReady(model);
            closeSetup();
          }}
        />
      )}
    </div>
  );
}
