// The dashboards' own window (index.html?view=memory|disk, opened by "Open in own window"):
// one tab, read while the window is visible, with the drive's speed-test figure for the Disk tab.
import { useState } from "preact/hooks";
import { useDashboard } from "../controllers/dashboard";
import { useDriveSpeed } from "../controllers/setup";
import { DiskTab, MemoryTab } from "./Dashboards";
import { DriveSpeed } from "./StatsLine";

export type DashboardView = "memory" | "disk";

/** The view a window was opened for, from its URL (null: the main window). */
export function dashboardView(search: string): DashboardView | null {
  const v = new URLSearchParams(search).get("view");
  return v === "memory" || v === "disk" ? v : null;
}

export function DashboardWindow({ initial }: { initial: DashboardView }) {
  const [view, setView] = useState(initial);
  const [series, error] = useDashboard(true);
  const drive = useDriveSpeed();
  return (
    <div class="dashboard-window">
      <nav class="tabs" role="tablist" aria-label="Dashboards">
        {(["memory", "disk"] as const).map((v) => (
          <button key={v} type="button" role="tab" aria-selected={view === v} class={view === v ? "current" : ""} onClick={() => setView(v)}>
            {v === "memory" ? "Memory" : "Disk"}
          </button>
        ))}
      </nav>
      <div class="dash-body">
        <DriveSpeed.Provider value={drive}>
          {view === "memory" ? <MemoryTab series={series} error={error} /> : <DiskTab series={series} error={error} active />}
        </DriveSpeed.Provider>
      </div>
    </div>
  );
}
