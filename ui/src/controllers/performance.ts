// Settings › Performance, the controller: the threads the model runs with and the form that changes
// them (applied by reopening the model, after the reply in progress), the drive speed test with its
// live progress, and saving the speculation and resume counts.
// Owns: every engine call of the section. Must not: render (components/PerformanceSettings.tsx and
// SpeculationSetting.tsx draw) or let an engine error escape (it becomes `status`).
import { useEffect, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { ModelInfo, PerformanceView, SetupEvent } from "../generated/ipc";
import { parseThreads, type ThreadForm, toThreadForm } from "../state/performance";

export type SpeedProgress = Extract<SetupEvent, { type: "speedTest" }>;

export interface Performance {
  view: PerformanceView | null;
  form: ThreadForm | null;
  /** What happened last, in words (also the load's error). */
  status: string | null;
  busy: "apply" | "speed" | null;
  speedBar: SpeedProgress | null;
  edit(patch: Partial<ThreadForm>): void;
  resetToDefaults(): void;
  apply(): Promise<void>;
  speedTest(): Promise<void>;
}

export function usePerformance(onApplied?: (m: ModelInfo) => void): Performance {
  const [view, setView] = useState<PerformanceView | null>(null);
  const [form, setForm] = useState<ThreadForm | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [busy, setBusy] = useState<"apply" | "speed" | null>(null);
  const [speedBar, setSpeedBar] = useState<SpeedProgress | null>(null);
  const load = () =>
    engine.performanceSettings().then(
      (v) => {
        setView(v);
        setForm((f) => f ?? toThreadForm(v.saved));
      },
      (e) => setStatus(e.message),
    );
  useEffect(() => void load(), []);

  const apply = async () => {
    if (!view || !form) return;
    const parsed = parseThreads(form, view.cores, view.maxIo);
    if (typeof parsed === "string") return setStatus(parsed);
    setBusy("apply");
    setStatus("Reopening the model with these threads (after the reply in progress)…");
    const t0 = performance.now();
    try {
      const model = await engine.applyPerformance(parsed);
      onApplied?.(model);
      setStatus(`Applied: the model reopened in ${((performance.now() - t0) / 1000).toFixed(1)} s.`);
      await load();
    } catch (err) {
      setStatus((err as { message: string }).message);
    } finally {
      setBusy(null);
    }
  };
  const speedTest = async () => {
    if (!view?.speedTestDir) return;
    setBusy("speed");
    setStatus(null);
    try {
      const s = await engine.setupSpeedTest(view.speedTestDir, (e) => e.type === "speedTest" && setSpeedBar(e));
      setView({ ...view, speed: s });
      setStatus("Measured. Apply reopens the model reading with the new pattern.");
    } catch (err) {
      setStatus((err as { message: string }).message);
    } finally {
      setBusy(null);
      setSpeedBar(null);
    }
  };
  return {
    view,
    form,
    status,
    busy,
    speedBar,
    edit: (patch) => form && setForm({ ...form, ...patch }),
    resetToDefaults: () => setForm({ compute: "", io: "" }),
    apply,
    speedTest,
  };
}

/** Saves the draft length of speculative decoding (0 = off), from the next reply. */
export const saveSpeculation = (maxDraft: number) => engine.setSpeculation({ maxDraft });

/** Saves how many conversations keep their engine state across a restart. */
export const saveResume = (keep: number) => engine.setResume({ keep });
