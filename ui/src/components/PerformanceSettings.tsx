// Settings › Performance: the kernel threads and the expert reads kept in flight (applied by
// reopening the model, after the reply in progress), what the model runs with now, speculative
// decoding (SpeculationSetting), and the drive speed test run again on the model's drive (the
// engine then reads with its best pattern).
// Owns: the form and its checks (parseThreads); the speed test's live bar.
import { useEffect, useState } from "preact/hooks";
import type { ModelInfo, PerformanceView, SetupEvent, SpeedSummary, Threads } from "../generated/ipc";
import * as engine from "../api/engine";
import { ResumeSetting, SpeculationSetting } from "./SpeculationSetting";

interface Form {
  /** "" = the default (every core, or what OMP_NUM_THREADS says). */
  compute: string;
  /** "" = the default (4, or what K3_ASYNC_IO_THREADS says). */
  io: string;
}

const toForm = (t: Threads): Form => ({ compute: t.compute?.toString() ?? "", io: t.io?.toString() ?? "" });

/** The counts to save, or the first problem in words. */
export function parseThreads(f: Form, cores: number, maxIo: number): Threads | string {
  const count = (text: string, what: string, max: number): number | null | string => {
    const t = text.trim();
    if (t === "") return null;
    const n = Number(t);
    if (!Number.isInteger(n) || n < 1 || n > max) return `${what}: a whole number from 1 to ${max}, or empty for the default.`;
    return n;
  };
  const compute = count(f.compute, "Compute threads", cores);
  if (typeof compute === "string") return compute;
  const io = count(f.io, "I/O threads", maxIo);
  if (typeof io === "string") return io;
  return { compute, io };
}

const mb = (bytes: number) => `${Math.round(bytes / 1048576)} MiB`;
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

function speedLine(s: SpeedSummary): string {
  const best = s.readPattern ? ` · best ${mb(s.readPattern.requestBytes)} × ${s.readPattern.depth} in flight: ${s.readPattern.mbPerS.toFixed(0)} MB/s` : "";
  return `one at a time ${s.qd1MbPerS.toFixed(0)} MB/s · 16 in flight ${s.qd16MbPerS.toFixed(0)} MB/s${best}${s.direct ? "" : " (through the page cache: O_DIRECT refused)"}`;
}

export function PerformanceSettings({ onApplied }: { onApplied?(m: ModelInfo): void }) {
  const [view, setView] = useState<PerformanceView | null>(null);
  const [form, setForm] = useState<Form | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [busy, setBusy] = useState<"apply" | "speed" | null>(null);
  const [speedBar, setSpeedBar] = useState<Extract<SetupEvent, { type: "speedTest" }> | null>(null);
  const load = () =>
    engine.performanceSettings().then(
      (v) => {
        setView(v);
        setForm((f) => f ?? toForm(v.saved));
      },
      (e) => setStatus(e.message),
    );
  useEffect(() => void load(), []);
  if (!view || !form) return <section class="settings-section"><h2>Performance</h2><p>{status ?? "Loading…"}</p></section>;

  const set = (patch: Partial<Form>) => setForm({ ...form, ...patch });
  const apply = async (e: Event) => {
    e.preventDefault();
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
    if (!view.speedTestDir) return;
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
  const envNote = (n: number | null, name: string) => (n === null ? "" : ` (${name}=${n})`);
  const computeDefault = view.fromEnv.compute ?? view.cores;
  const ioDefault = view.fromEnv.io ?? view.defaultIo;
  const u = view.inUse;
  return (
    <section class="settings-section" aria-labelledby="performance-title" data-testid="performance-settings">
      <h2 id="performance-title">Performance</h2>
      <p class="muted">Threads are set when the model opens, so applying reopens it (as long as a start takes). The output does not change, only the speed.</p>
      <dl class="facts" data-testid="threads-in-use">
        <dt>In use</dt>
        <dd>{u
            ? `${plural(u.compute, "compute thread", "compute threads")} · ${plural(u.io, "expert read", "expert reads")} in flight · streamed reads ${mb(u.readRequestBytes)} × ${u.readDepth}`
            : "no model is open"}</dd>
        <dt>This machine</dt>
        <dd>{view.cores} cores</dd>
      </dl>
      <form class="new-chat-form" onSubmit={(e) => void apply(e)}>
        <label>
          <span>Compute threads</span>
          <input
            aria-label="Compute threads"
            inputMode="numeric"
            placeholder={`${computeDefault}${envNote(view.fromEnv.compute, "OMP_NUM_THREADS")}`}
            value={form.compute}
            onInput={(e) => set({ compute: e.currentTarget.value })}
          />
        </label>
        <label>
          <span>I/O threads <span class="muted">(expert reads in flight)</span></span>
          <input
            aria-label="I/O threads"
            inputMode="numeric"
            placeholder={`${ioDefault}${envNote(view.fromEnv.io, "K3_ASYNC_IO_THREADS")}`}
            value={form.io}
            onInput={(e) => set({ io: e.currentTarget.value })}
          />
        </label>
        <div class="settings-actions">
          <button type="submit" class="primary" disabled={busy !== null}>
            Apply
          </button>
          <button type="button" disabled={busy !== null} onClick={() => setForm({ compute: "", io: "" })}>
            Use the defaults
          </button>
        </div>
      </form>
      <SpeculationSetting saved={view.speculation} max={view.maxDraft} />
      <ResumeSetting saved={view.resume} max={view.maxKeep} usage={view.savedStates} />
      <h3>Drive speed</h3>
      <p data-testid="speed-result">{view.speed ? speedLine(view.speed) : "Not measured yet: the engine reads 8 MiB pieces, 8 in flight."}</p>
      <div class="settings-actions">
        <button type="button" data-testid="speed-test" disabled={busy !== null || !view.speedTestDir} onClick={() => void speedTest()}>
          Re-run speed test
        </button>
        <span class="muted">
          {view.speedTestDir ? `Reads a scratch file in ${view.speedTestDir} (a minute or two).` : "The bundled demo model is read into RAM: there is no drive to measure."}
        </span>
      </div>
      {speedBar && (
        <div class="bar" role="progressbar" aria-valuenow={Math.round(speedBar.fraction * 100)}>
          <div style={{ width: `${speedBar.fraction * 100}%` }} />
          <span>{speedBar.depth === 0 ? "Finding the best read pattern…" : `${speedBar.depth} in flight: ${speedBar.mbPerS.toFixed(0)} MB/s`}</span>
        </div>
      )}
      {status && <p role="status">{status}</p>}
    </section>
  );
}
