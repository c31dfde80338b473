// The Memory and Disk dashboards, the controller: reading the `dashboard` command while a tab is on
// screen and the window visible (every READ_EVERY_MS, so no chart redraws more than twice a second;
// nothing is read otherwise), the drives' space (every DISK_EVERY_MS) and opening a dashboard in
// its own window (the drive's measured speed is controllers/setup.ts's useDriveSpeed).
// Owns: those engine calls and their timers. Must not: compute figures (state/dashboard.ts folds
// the readings) or render (components/Dashboards.tsx and DashboardWindow.tsx draw).
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { DriveUsage } from "../generated/ipc";
import { type DashboardSeries, emptySeries, fold } from "../state/dashboard";

export const READ_EVERY_MS = 500;
export const DISK_EVERY_MS = 5000;

/** Reads the dashboard while `active` and the window is visible. */
export function useDashboard(active: boolean): [DashboardSeries, string | null] {
  const [series, setSeries] = useState<DashboardSeries>(emptySeries);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!active) return;
    let stopped = false;
    let after = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      if (document.visibilityState === "visible") {
        try {
          const d = await engine.dashboard(after);
          if (stopped) return;
          after = d.lastSeq;
          setSeries((s) => fold(s, d));
          setError(null);
        } catch (e) {
          setError((e as { message?: string }).message ?? String(e));
        }
      }
      if (!stopped) timer = setTimeout(() => void tick(), READ_EVERY_MS);
    };
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [active]);
  return [series, error];
}

/** Each drive's space, read while `active` (null until the first reading). */
export function useDiskUsage(active: boolean): DriveUsage[] | null {
  const [drives, setDrives] = useState<DriveUsage[] | null>(null);
  useEffect(() => {
    if (!active) return;
    let stopped = false;
    const read = () => engine.diskUsage().then((d) => !stopped && setDrives(d), () => undefined);
    void read();
    const t = setInterval(() => document.visibilityState === "visible" && void read(), DISK_EVERY_MS);
    return () => {
      stopped = true;
      clearInterval(t);
    };
  }, [active]);
  return drives;
}

export function openDashboardWindow(view: "memory" | "disk"): void {
  void engine.openDashboardWindow(view).catch(() => undefined);
}
