// The guided first-time setup (PRODUCT.md §1.1): one screen per step, each showing what was
// measured with its exact numbers and a way out. The steps, what blocks each and the saved state are
// the Rust side's (src-tauri/src/setup); this file draws them and forwards choices.
import { useEffect, useReducer, useRef, useState } from "preact/hooks";
import * as engine from "../api/engine";
import type { Blocker, IpcError, MachineView, ModelInfo, PresetRow, SetupProblem, SetupSettings, SetupStep } from "../generated/ipc";
import { type JobView, countStates, duration, emptyJob, foldSetup, gb } from "../state/setup";

const STEPS: { step: SetupStep; label: string }[] = [
  { step: "welcome", label: "Welcome" },
  { step: "hardware", label: "Hardware" },
  { step: "drives", label: "Drives" },
  { step: "speedTest", label: "Speed test" },
  { step: "preset", label: "Preset" },
  { step: "download", label: "Download" },
  { step: "pack", label: "Pack trunk" },
  { step: "firstLoad", label: "First load" },
  { step: "ready", label: "Ready" },
];

export interface WizardProps {
  initial: SetupSettings;
  /** The wizard finished with this model loaded. */
  onReady(model: ModelInfo): void;
  /** "Try the demo model": close the wizard for now. */
  onClose(): void;
}

export function Wizard({ initial, onReady, onClose }: WizardProps) {
  const [settings, setSettings] = useState(initial);
  const [blockers, setBlockers] = useState<Blocker[]>([]);
  const [error, setError] = useState<IpcError | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const step = settings.step;

  const guard = async <T,>(f: () => Promise<T>): Promise<T | undefined> => {
    setError(null);
    try {
      return await f();
    } catch (e) {
      setError(engine.toIpcError(e));
      return undefined;
    }
  };
  const next = async () => {
    setNote(null);
    const r = await guard(engine.setupNext);
    if (r) {
      setSettings(r.settings);
      setBlockers(r.blockers);
    }
  };
  const choose = async (choice: Parameters<typeof engine.setupChoose>[0]) => {
    const s = await guard(() => engine.setupChoose(choice));
    if (s) {
      setSettings(s);
      setBlockers([]);
    }
  };
  const close = async () => {
    await guard(() => engine.setupPause());
    await guard(() => engine.setupDismiss(true));
    onClose();
  };
  const common = { settings, next, choose, guard, setSettings };

  return (
    <div class="wizard" role="dialog" aria-label="Set up Kimi K3" data-step={step}>
      <ol class="wizard-steps">
        {STEPS.map((s) => (
          <li key={s.step} class={s.step === step ? "current" : ""} aria-current={s.step === step ? "step" : undefined}>
            {s.label}
          </li>
        ))}
      </ol>
      <section class="wizard-body">
        {note && (
          <p class="card amber wizard-note" role="status">
            {note}
          </p>
        )}
        {step === "welcome" && <Welcome {...common} />}
        {step === "hardware" && <Hardware {...common} />}
        {step === "drives" && <Drives {...common} />}
        {step === "speedTest" && <SpeedTest {...common} />}
        {step === "preset" && <Presets {...common} />}
        {(step === "download" || step === "pack" || step === "firstLoad" || step === "ready") && (
          <Jobs {...common} onReady={onReady} onCancelled={setNote} />
        )}
        <Blockers blockers={blockers} onConfirm={(key) => void choose({ confirm: key }).then(next)} />
        {error && (
          <p class="wizard-error" role="alert">
            {error.message}
          </p>
        )}
      </section>
      <footer class="wizard-foot">
        <button type="button" class="link" data-testid="try-demo" onClick={() => void close()}>
          Try the demo model
        </button>
      </footer>
    </div>
  );
}

interface StepProps {
  settings: SetupSettings;
  next(): Promise<void>;
  choose(c: Parameters<typeof engine.setupChoose>[0]): Promise<void>;
  guard<T>(f: () => Promise<T>): Promise<T | undefined>;
  setSettings(s: SetupSettings): void;
}

const OVERRIDE_KEY: Partial<Record<Blocker["kind"], string>> = { cpuLacksAvx2: "cpu", networkDrive: "networkDrive", slowDrive: "slowDrive" };

function blockerText(b: Blocker): string {
  switch (b.kind) {
    case "cpuLacksAvx2":
      return `This CPU lacks AVX2/FMA. Scalar kernels give identical output, much slower. (${b.message})`;
    case "tooLittleMemory":
      return `${b.message}. Close other apps, then check again.`;
    case "noStoreChosen":
      return "Choose a folder for the model store.";
    case "notEnoughSpace":
      return `${b.message}. Choose another drive, put the trunk on a second drive, or free space and check again.`;
    case "unsuitableDrive":
      return b.message;
    case "networkDrive":
      return `The store is on ${b.message}.`;
    case "noSpeedTest":
      return "Run the speed test first.";
    case "slowDrive":
      return `Too slow: ${b.message}. A faster drive for the trunk and shards helps most (experts are 17.5 MB random reads).`;
    case "noPreset":
      return "Choose a preset.";
    case "jobUnfinished":
      return "Still working.";
  }
}

function Blockers({ blockers, onConfirm }: { blockers: Blocker[]; onConfirm(key: string): void }) {
  if (blockers.length === 0) return null;
  return (
    <ul class="blockers" aria-label="What blocks this step">
      {blockers.map((b) => {
        const key = OVERRIDE_KEY[b.kind];
        return (
          <li key={b.kind} class="card red">
            {blockerText(b)}
            {key && (
              <button type="button" onClick={() => onConfirm(key)}>
                Continue anyway
              </button>
            )}
          </li>
        );
      })}
    </ul>
  );
}

function Welcome({ next, guard, setSettings }: StepProps) {
  const [adopting, setAdopting] = useState(false);
  const [path, setPath] = useState("");
  const adopt = async () => {
    const s = await guard(() => engine.setupAdopt(path.trim()));
    if (s) setSettings(s);
  };
  return (
    <div>
      <h2>Run Kimi K3 on this computer</h2>
      <p>
        Kimi K3 has 2.78 trillion parameters: 1.56 TB of checkpoint plus a 0.11 TB packed trunk on a drive you choose. Only what
        each token needs is read, so it runs on the RAM you have — honestly, at seconds per token: about 30 s at 8 GB, about 6 s
        with 128 GB and a fast NVMe drive.
      </p>
      <p>The next screens measure this machine, its drives and their speed before a single byte is downloaded.</p>
      <div class="wizard-actions">
        <button type="button" class="primary" onClick={() => void next()}>
          Start
        </button>
        <button type="button" onClick={() => setAdopting((a) => !a)} aria-expanded={adopting}>
          I already have the files
        </button>
      </div>
      {adopting && (
        <div class="adopt">
          <label>
            Folder with the checkpoint
            <input type="text" name="adopt" value={path} onInput={(e) => setPath((e.target as HTMLInputElement).value)} placeholder="/models/Kimi-K3" />
          </label>
          <button type="button" onClick={() => void adopt()} disabled={path.trim() === ""}>
            Use these files
          </button>
          <p class="hint">Every file is hashed in place against the pinned release; only missing or damaged files are fetched.</p>
        </div>
      )}
    </div>
  );
}

function useMachine(store: string | null, guard: StepProps["guard"]) {
  const [view, setView] = useState<MachineView | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    void guard(() => engine.setupExamine(store)).then((v) => live && v && setView(v));
    return () => {
      live = false;
    };
  }, [store, tick]);
  return [view, () => setTick((t) => t + 1)] as const;
}

function Hardware({ next, guard }: StepProps) {
  const [view, again] = useMachine(null, guard);
  return (
    <div>
      <h2>This machine</h2>
      {!view && <p>Measuring…</p>}
      {view && (
        <div class="cards">
          <div class={`card ${view.cpu.level}`} data-item="cpu">
            <h3>{view.cpu.title}</h3>
            <p>{view.cpuText}</p>
            <p>{view.cpu.message}</p>
          </div>
          <div class={`card ${view.memory.level}`} data-item="memory">
            <h3>{view.memory.title}</h3>
            <p>{view.memoryText}</p>
            <p>{view.memory.message}</p>
          </div>
        </div>
      )}
      <div class="wizard-actions">
        <button type="button" onClick={again}>
          Check again
        </button>
        <button type="button" class="primary" onClick={() => void next()} disabled={!view}>
          Next
        </button>
      </div>
    </div>
  );
}

function Drives({ settings, next, choose, guard }: StepProps) {
  const [store, setStore] = useState(settings.storeDir ?? "");
  const [trunk, setTrunk] = useState(settings.trunkDir ?? "");
  const [view, again] = useMachine(settings.storeDir, guard);
  const save = async () => {
    await choose({ storeDir: store.trim(), trunkDir: trunk.trim() });
  };
  return (
    <div>
      <h2>Where the model goes</h2>
      {view && (
        <table class="drives">
          <thead>
            <tr>
              <th>Volume</th>
              <th>File system</th>
              <th>Kind</th>
              <th>Free of total</th>
              <th>Verdict</th>
            </tr>
          </thead>
          <tbody>
            {view.drives.map((d) => (
              <tr key={d.mount} class={d.level}>
                <td>{d.mount}</td>
                <td>{d.fs}</td>
                <td>{d.kind}</td>
                <td>
                  {gb(d.freeBytes)} of {gb(d.totalBytes)}
                </td>
                <td>{d.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <label>
        Model store (1.56 TB)
        <input type="text" name="store" value={store} onInput={(e) => setStore((e.target as HTMLInputElement).value)} placeholder="/mnt/nvme/Kimi-K3" />
      </label>
      <label>
        Trunk (0.11 TB, the fastest drive; empty: inside the store)
        <input type="text" name="trunk" value={trunk} onInput={(e) => setTrunk((e.target as HTMLInputElement).value)} />
      </label>
      <div class="wizard-actions">
        <button type="button" onClick={() => void save().then(again)}>
          Check again
        </button>
        <button type="button" class="primary" onClick={() => void save().then(next)} disabled={store.trim() === ""}>
          Next
        </button>
      </div>
    </div>
  );
}

function SpeedTest({ settings, next, guard, setSettings }: StepProps) {
  const [dir, setDir] = useState(settings.storeDir ?? "");
  const [job, fold] = useReducer(foldSetup, emptyJob);
  const [running, setRunning] = useState(false);
  const run = async () => {
    setRunning(true);
    const r = await guard(() => engine.setupSpeedTest(dir.trim(), fold));
    setRunning(false);
    if (r) setSettings({ ...settings, speed: r });
  };
  const s = settings.speed;
  const nvme = (mb: number) => `${Math.round((mb / 3200) * 100)}% of a 3.2 GB/s NVMe, ${Math.round((mb / 4600) * 100)}% of 4.6 GB/s`;
  return (
    <div>
      <h2>How fast the drive really is</h2>
      <p>
        Random reads of one expert (17,547,264 bytes) straight from the drive, bypassing the page cache, one at a time and 16 at a
        time — the way the engine reads.
      </p>
      <label>
        Test folder (a scratch file is written there and removed)
        <input type="text" name="speed-dir" value={dir} onInput={(e) => setDir((e.target as HTMLInputElement).value)} />
      </label>
      {running && job.speedTest && (
        <div class="bar" role="progressbar" aria-valuenow={Math.round(job.speedTest.fraction * 100)}>
          <div style={{ width: `${job.speedTest.fraction * 100}%` }} />
          <span>
            {job.speedTest.depth === 0
              ? "Finding the request size and depth this drive reads fastest…"
              : `${job.speedTest.depth} in flight: ${job.speedTest.mbPerS.toFixed(0)} MB/s`}
          </span>
        </div>
      )}
      {s && (
        <table class="speed">
          <tbody>
            <tr data-depth="1">
              <th>1 at a time</th>
              <td>{s.qd1MbPerS.toFixed(0)} MB/s</td>
              <td>{s.qd1ExpertsPerS.toFixed(1)} experts/s</td>
              <td>{nvme(s.qd1MbPerS)}</td>
            </tr>
            <tr data-depth="16">
              <th>16 at a time</th>
              <td>{s.qd16MbPerS.toFixed(0)} MB/s</td>
              <td>{s.qd16ExpertsPerS.toFixed(1)} experts/s</td>
              <td>{nvme(s.qd16MbPerS)}</td>
            </tr>
            {s.readPattern && (
              <tr data-depth="best">
                <th>Best pattern</th>
                <td>{s.readPattern.mbPerS.toFixed(0)} MB/s</td>
                <td>
                  {s.readPattern.requestBytes / 1048576} MiB × {s.readPattern.depth} in flight
                </td>
                <td>the engine reads this way</td>
              </tr>
            )}
          </tbody>
        </table>
      )}
      {s && !s.direct && <p class="card amber">This file system refused direct reads; the figures were taken with the page cache dropped.</p>}
      <div class="wizard-actions">
        <button type="button" onClick={() => void run()} disabled={running || dir.trim() === ""}>
          {s ? "Test again" : "Run the speed test"}
        </button>
        <button type="button" class="primary" onClick={() => void next()} disabled={running || !s}>
          Next
        </button>
      </div>
    </div>
  );
}

function Presets({ settings, next, choose, guard }: StepProps) {
  const [rows, setRows] = useState<PresetRow[] | null>(null);
  useEffect(() => {
    void guard(engine.setupForecast).then((r) => r && setRows(r));
  }, []);
  const chosen = settings.preset ?? "auto";
  const pick = (name: string) => void choose({ preset: name });
  const row = rows?.find((r) => r.name === chosen);
  return (
    <div>
      <h2>How much memory to use</h2>
      {!rows && <p>Planning each preset and measuring this CPU…</p>}
      {rows && (
        <table class="presets">
          <thead>
            <tr>
              <th />
              <th>Preset</th>
              <th>Layers in RAM</th>
              <th>Expert slots</th>
              <th>Peak memory</th>
              <th>Headroom</th>
              <th>Default context</th>
              <th>Seconds per token</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.name} class={r.fits ? "" : "red"}>
                <td>
                  <input type="radio" name="preset" value={r.name} checked={r.name === chosen} onChange={() => pick(r.name)} aria-label={r.name} />
                </td>
                <td>{r.name}</td>
                <td>
                  {r.pinnedLayers}/{r.layers}
                </td>
                <td>{r.expertSlots}</td>
                <td>{r.peakBytes ? gb(r.peakBytes) : "—"}</td>
                <td>{r.problem ?? gb(r.headroomBytes)}</td>
                <td title={r.defaultContext ? `KV cache ${gb(r.defaultContext * r.kvBytesPerPosition)} at this context` : undefined}>
                  {r.defaultContext ? `${r.defaultContext.toLocaleString("en-US")} positions` : "—"}
                </td>
                <td>{r.secondsHigh ? `${r.secondsLow.toFixed(1)}–${r.secondsHigh.toFixed(1)}` : "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {row && !row.fits && <p class="card amber">{chosen} does not fit this machine's free memory: it will swap or be refused.</p>}
      <div class="wizard-actions">
        <button type="button" class="primary" onClick={() => void (settings.preset ? next() : choose({ preset: chosen }).then(next))} disabled={!rows}>
          Next
        </button>
      </div>
    </div>
  );
}

interface JobsProps extends StepProps {
  onReady(m: ModelInfo): void;
  /** The download was cancelled (partials kept): the words to show on the screen it returns to. */
  onCancelled(note: string): void;
}

function Jobs({ settings, guard, setSettings, choose, onReady, onCancelled }: JobsProps) {
  const [job, fold] = useReducer(foldSetup, emptyJob);
  const [running, setRunning] = useState(false);
  const started = useRef(false);
  const current = useRef<Promise<void> | null>(null);
  const run = () => {
    const go = async () => {
      setRunning(true);
      const model = await guard(() => engine.setupRun(fold));
      setRunning(false);
      const st = await guard(engine.setupStatus);
      if (st) setSettings(st.settings);
      if (model) onReady(model);
    };
    current.current = go();
    return current.current;
  };
  // Cancel = stop (everything durable is kept) and go back to choosing the drive; starting
  // again resumes from the kept bytes.
  const cancel = async () => {
    await guard(engine.setupPause);
    await current.current;
    await choose({ backTo: "drives" });
    const kept = job.doneBytes > 0 ? `${gb(job.doneBytes)} of ${gb(job.totalBytes)}` : "Everything downloaded so far";
    onCancelled(`Download cancelled. ${kept} kept in ${settings.storeDir ?? "the store"}; starting again resumes from there.`);
  };
  useEffect(() => {
    if (!started.current && settings.step !== "ready") {
      started.current = true;
      void run();
    }
  }, []);
  const step = job.step ?? settings.step;
  const counts = countStates(job.files);
  const cells = Object.values(job.files).sort((a, b) => a.path.localeCompare(b.path));
  return (
    <div data-events={job.events}>
      <h2>{step === "download" ? "Downloading and verifying" : step === "pack" ? "Packing the trunk" : step === "firstLoad" ? "First load" : "Ready"}</h2>
      {job.keptBytes !== null && job.keptBytes > 0 && (
        <p class="resume">
          Resuming: {gb(job.keptBytes)} of {gb(job.totalBytes)} kept.
        </p>
      )}
      {step === "download" && (
        <>
          <div class="bar" role="progressbar" aria-valuenow={job.totalBytes ? Math.round((job.doneBytes / job.totalBytes) * 100) : 0}>
            <div style={{ width: `${job.totalBytes ? (job.doneBytes / job.totalBytes) * 100 : 0}%` }} />
            <span>
              {gb(job.doneBytes)} of {gb(job.totalBytes)} · {(job.speed / 1e6).toFixed(1)} MB/s · ETA {duration(job.eta)}
            </span>
          </div>
          <p class="legend">
            {Object.entries(counts)
              .map(([s, n]) => `${n} ${s}`)
              .join(" · ")}
          </p>
          <div class="grid" aria-label="Files">
            {cells.map((c) => (
              <span key={c.path} class={`cell ${c.state}`} title={`${c.path}: ${c.state}${c.detail ? ` — ${c.detail}` : ""}`} data-path={c.path} />
            ))}
          </div>
        </>
      )}
      {step === "pack" && job.pack && (
        <p>
          Layer {job.pack.layer}/{job.pack.layers} · {job.pack.mbPerS.toFixed(0)} MB/s · ETA {duration(job.pack.etaSeconds)}
        </p>
      )}
      {step === "firstLoad" && <FirstLoad preset={settings.preset ?? "auto"} progress={job.firstLoad} />}
      {job.awake && running && (
        <p class="legend" data-testid="awake" title={job.awake.detail ?? undefined}>
          {job.awake.held
            ? "This computer is kept awake until this finishes."
            : "This computer may go to sleep meanwhile: the system would not keep it awake. Keep it awake yourself if you can; the download resumes either way."}
        </p>
      )}
      {job.retry && <p class="card amber retry">{job.retry}</p>}
      {job.paused && <p class="card amber">Paused: {job.paused}</p>}
      {job.notices.length > 0 && (
        <ul class="notices">
          {job.notices.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
      {job.phase === "paused" && <p>Paused. Everything downloaded so far is kept.</p>}
      {job.problem && <ProblemScreen problem={job.problem} guard={guard} retry={() => void run()} />}
      <div class="wizard-actions">
        {running ? (
          <button type="button" onClick={() => void guard(engine.setupPause)}>
            Pause
          </button>
        ) : (
          settings.step !== "ready" &&
          !job.problem && (
            <button type="button" class="primary" onClick={() => void run()}>
              {job.phase === "failed" ? "Try again" : "Resume"}
            </button>
          )
        )}
        {step === "download" && (
          <button type="button" data-testid="cancel-download" onClick={() => void cancel()}>
            Cancel
          </button>
        )}
      </div>
    </div>
  );
}

/** The failures with a screen of their own: a token field for 401/403, the files that failed their hash. */
function ProblemScreen({ problem, guard, retry }: { problem: SetupProblem; guard: StepProps["guard"]; retry(): void }) {
  const [token, setToken] = useState("");
  if (problem.kind === "denied") {
    const save = async () => {
      const ok = await guard(() => engine.setupToken(token));
      if (ok !== undefined) retry();
    };
    return (
      <div class="card red problem" data-problem="denied">
        <h3>Hugging Face refused access (HTTP {problem.status})</h3>
        <p>
          {problem.url} needs you to accept the model's licence on its Hugging Face page while signed in, and an access token
          (Settings › Access Tokens on huggingface.co, “read” is enough).
        </p>
        {problem.tokenFromEnv ? (
          <p>HF_TOKEN is set in this app's environment and was refused: change it there and start the app again.</p>
        ) : (
          <>
            <label>
              Access token (saved to {problem.tokenPath}, readable by you only)
              <input type="password" name="hf-token" autoComplete="off" value={token} placeholder="hf_…" onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
            </label>
            <button type="button" class="primary" disabled={token.trim() === ""} onClick={() => void save()}>
              Save token and try again
            </button>
          </>
        )}
      </div>
    );
  }
  return (
    <div class="card red problem" data-problem="badFiles">
      <h3>
        {problem.files.length === 1 ? "1 file" : `${problem.files.length} files`} failed the integrity check twice
      </h3>
      <p>Their bytes were not kept. A proxy, the disk or RAM may be at fault. Downloading again fetches only these files; every verified file stays.</p>
      <ul class="bad-files">
        {problem.files.map((f) => (
          <li key={f.path}>
            <code>{f.path}</code>: expected SHA-256 <code>{f.expected.slice(0, 16)}…</code>, got <code>{f.got.slice(0, 16)}…</code>
          </li>
        ))}
      </ul>
      <button type="button" class="primary" onClick={retry}>
        Download {problem.files.length === 1 ? "it" : "them"} again
      </button>
    </div>
  );
}

function FirstLoad({ preset, progress }: { preset: string; progress: JobView["firstLoad"] }) {
  const pinning = progress !== null && progress.layersTotal > 0;
  return (
    <div class="first-load" data-testid="first-load">
      <p>Loading the model with the {preset} preset…</p>
      {pinning && (
        <div class="bar" role="progressbar" aria-valuenow={Math.round((progress.layersDone / progress.layersTotal) * 100)}>
          <div style={{ width: `${(progress.layersDone / progress.layersTotal) * 100}%` }} />
          <span>
            Trunk layer {progress.layersDone}/{progress.layersTotal} in memory
          </span>
        </div>
      )}
      {progress && (
        <p class="legend">
          {progress.rssBytes !== null ? `Memory in use: ${gb(progress.rssBytes)}` : "Memory in use: —"} · {duration(progress.seconds)}
        </p>
      )}
    </div>
  );
}
