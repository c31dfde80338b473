// The Memory and Disk tabs (Ctrl/⌘+2, Ctrl/⌘+3): live charts of where memory and time go.
// Owns: how each figure is drawn. Reading the dashboard while a tab is on screen and the drives'
// space are controllers/dashboard.ts's.
// Must not: compute figures: series and advice come from state/dashboard.ts, plans from the backend.
import { useContext, useMemo } from "preact/hooks";
import type uPlot from "uplot";
import type { Dashboard, DriveUsage, MemoryPart } from "../generated/ipc";
import { openDashboardWindow, useDiskUsage } from "../controllers/dashboard";
import { type DashboardSeries, advice, averages, recentRate, recentWindow, upTo } from "../state/dashboard";
import { formatBytesExact, formatCount, formatGB, formatPercent } from "../state/format";
import { Chart, type ChartOptions, bars } from "./Chart";
import { DriveSpeed } from "./StatsLine";

const css = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
const GB = 1e9;
const MB = 1e6;
const gbAxis = (_: uPlot, vals: number[]) => vals.map((v) => `${(v / 1e9).toPrecision(3)} GB`);
/** Time axes span at least the last 30 s, and the last 30 s before now with no reading yet. */
const recent = (_u: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax => recentWindow(min, max, Date.now() / 1000);
/** A time chart with no reading yet shows the last 30 s; with one, the 30 s up to it. */
const lastHalfMinute = (only: number | null) => recentWindow(only, only, Date.now() / 1000);

function memoryChartOptions(): ChartOptions {
  return {
    scales: { x: { time: true, range: recent }, y: { range: (_u, _min, max) => upTo(max, GB) } },
    axes: [{}, { values: gbAxis, size: 80 }],
    series: [
      {},
      { label: "RSS", stroke: css("--chart-rss"), width: 2, points: { show: false }, value: (_u, v) => (v == null ? "—" : formatGB(v)) },
      { label: "Plan", stroke: css("--chart-plan"), dash: [6, 4], width: 1.5, points: { show: false }, value: (_u, v) => (v == null ? "—" : formatGB(v)) },
    ],
  };
}

function timelineOptions(U: typeof uPlot): ChartOptions {
  const ms = (_u: uPlot, v: number | null) => (v == null ? "—" : `${Math.round(v)} ms`);
  return {
    legend: { show: false },
    scales: { x: { time: false }, y: { range: (_u, _min, max) => upTo(max, 10) }, pct: { range: [0, 100] } },
    axes: [{ label: "token", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500], values: (_u, vals) => vals.map((v) => String(v)) }, { values: (_u, vals) => vals.map((v) => `${Math.round(v)} ms`), size: 70 }, { scale: "pct", side: 1, values: (_u, vals) => vals.map((v) => `${v}%`), grid: { show: false } }],
    series: [
      {},
      // Cumulative, tallest first: each bar's top segment is the series drawn before the next.
      { label: "compute", fill: css("--chart-compute"), stroke: css("--chart-compute"), paths: bars(U), points: { show: false }, value: ms },
      { label: "I/O wait: experts", fill: css("--chart-experts"), stroke: css("--chart-experts"), paths: bars(U), points: { show: false }, value: ms },
      { label: "I/O wait: trunk", fill: css("--chart-trunk"), stroke: css("--chart-trunk"), paths: bars(U), points: { show: false }, value: ms },
      { label: "true hit rate", scale: "pct", stroke: css("--chart-hit"), width: 2, points: { show: false }, value: (_u, v) => (v == null ? "—" : `${Math.round(v)}%`) },
    ],
  };
}

function readChartOptions(drive: number | null): ChartOptions {
  return {
    scales: { x: { time: true, range: recent }, y: { range: (_u, _min, max) => upTo(Math.max(max ?? 0, drive ?? 0), 100 * MB) } },
    axes: [{}, { values: (_u, vals) => vals.map((v) => `${(v / 1e6).toFixed(0)} MB/s`), size: 80 }],
    series: [
      {},
      { label: "read", stroke: css("--chart-read"), width: 2, points: { show: false }, value: (_u, v) => (v == null ? "—" : `${(v / 1e6).toFixed(0)} MB/s`) },
      { label: "speed test", stroke: css("--chart-plan"), dash: [6, 4], width: 1.5, points: { show: false }, value: (_u, v) => (v == null ? "—" : `${(v / 1e6).toFixed(0)} MB/s`) },
    ],
  };
}

/** A tab's title, with "Open in own window" (not shown in that window itself). */
function DashHead({ id, title, view }: { id: string; title: string; view: "memory" | "disk" }) {
  const own = new URLSearchParams(location.search).has("view");
  return (
    <div class="dash-head">
      <h2 id={id}>{title}</h2>
      {!own && (
        <button type="button" data-testid="own-window" onClick={() => openDashboardWindow(view)}>
          Open in own window
        </button>
      )}
    </div>
  );
}

function Activity({ d }: { d: Dashboard | null }) {
  if (!d) return <p class="dash-activity">Reading…</p>;
  const a = d.activity;
  const text =
    a.kind === "generating" ? `Generating: ${formatCount(a.tokens)} tokens` :
    a.kind === "replanning" ? `Applying a memory plan: ${a.layersDone}/${a.layersTotal} layers pinned` :
    a.kind === "opening" ? `Opening the model: ${a.layersDone}/${a.layersTotal} layers` : "Idle";
  return <p class="dash-activity" data-testid="dash-activity">{text}</p>;
}

function Breakdown({ parts, total }: { parts: MemoryPart[]; total: number }) {
  if (parts.length === 0 || total <= 0) return null;
  return (
    <div class="breakdown" aria-label="Where the plan's memory goes">
      <div class="breakdown-bar">
        {parts.filter((p) => p.bytes > 0).map((p) => (
          <div key={p.key} class={`part part-${p.key}`} style={{ flexGrow: p.bytes }} title={`${p.label}: ${formatGB(p.bytes)} (${formatBytesExact(p.bytes)})`} />
        ))}
      </div>
      <ul class="breakdown-legend">
        {parts.map((p) => (
          <li key={p.key} data-part={p.key}>
            <span class={`swatch part-${p.key}`} aria-hidden="true" />
            <span class="part-label">{p.label}</span> <span class="part-bytes">{formatGB(p.bytes)}</span>
            {p.detail && <span class="part-detail"> · {p.detail}</span>}
          </li>
        ))}
      </ul>
    </div>
  );
}

function SystemBar({ d }: { d: Dashboard }) {
  const { totalBytes, availableBytes, pressure } = d.system;
  if (totalBytes <= 0) return null;
  const ours = Math.min(d.rssBytes ?? 0, totalBytes);
  const rest = Math.max(0, totalBytes - availableBytes - ours);
  return (
    <div class="system-memory" aria-label="System memory">
      <div class="breakdown-bar">
        <div class="part sys-ours" style={{ flexGrow: ours }} title={`k3-desktop: ${formatGB(ours)}`} />
        <div class="part sys-rest" style={{ flexGrow: rest }} title={`Other programs and the kernel: ${formatGB(rest)}`} />
        <div class="part sys-free" style={{ flexGrow: availableBytes }} title={`Available: ${formatGB(availableBytes)}`} />
      </div>
      <p class="dash-figures" data-testid="system-memory">
        <span class="swatch sys-ours" aria-hidden="true" /> ours {formatGB(ours)} · <span class="swatch sys-rest" aria-hidden="true" /> others {formatGB(rest)} ·{" "}
        <span class="swatch sys-free" aria-hidden="true" /> available {formatGB(availableBytes)} of {formatGB(totalBytes)} · pressure{" "}
        {pressure ?? "n/a (this system gives no reading)"}
      </p>
    </div>
  );
}

export function MemoryTab({ series, error }: { series: DashboardSeries; error: string | null }) {
  const d = series.last;
  const data = useMemo(() => [series.at, series.rss, series.plan] as uPlot.AlignedData, [series]);
  return (
    <section class="dashboard" aria-labelledby="memory-title" data-testid="memory-tab">
      <DashHead id="memory-title" title="Memory" view="memory" />
      {error && <p class="dash-error" role="alert">{error}</p>}
      <Activity d={d} />
      {d && (
        <p class="dash-figures" data-testid="memory-figures">
          RSS <strong data-fig="rss">{d.rssBytes === null ? "—" : formatGB(d.rssBytes)}</strong> · peak{" "}
          <span data-fig="peak">{d.peakRssBytes === null ? "—" : formatGB(d.peakRssBytes)}</span> · plan{" "}
          <span data-fig="plan">{d.planBytes === null ? "all resident" : formatGB(d.planBytes)}</span> · trunk in RAM{" "}
          <span data-fig="pinned">{d.pinnedLayers}/{d.layers} layers</span>
        </p>
      )}
      <Chart options={memoryChartOptions} data={data} sparseX={lastHalfMinute} height={180} label="Resident memory and the plan over time" />
      {d && <Breakdown parts={d.breakdown} total={d.planBytes ?? d.breakdown.reduce((a, p) => a + p.bytes, 0)} />}
      {d && <SystemBar d={d} />}
    </section>
  );
}

const PART_NAMES: Record<string, string> = { store: "model store", trunk: "packed trunk", partial: "partial downloads", appData: "app data" };

function Drives({ drives }: { drives: DriveUsage[] | null }) {
  if (!drives) return null;
  return (
    <table class="drives-table" data-testid="drives">
      <thead>
        <tr><th scope="col">Drive</th><th scope="col">Ours</th><th scope="col">Free</th></tr>
      </thead>
      <tbody>
        {drives.map((d) => (
          <tr key={d.mount}>
            <th scope="row">{d.mount} <span class="muted">{d.fs} · {d.kind}</span></th>
            <td>{d.parts.map((p) => <div key={p.key} title={p.path}>{PART_NAMES[p.key] ?? p.key}: {formatGB(p.bytes)}</div>)}</td>
            <td>{formatGB(d.freeBytes)} of {formatGB(d.totalBytes)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function DiskTab({ series, error, active }: { series: DashboardSeries; error: string | null; active: boolean }) {
  const drive = useContext(DriveSpeed);
  const drives = useDiskUsage(active);
  const d = series.last;
  // Prefill (each reply's first token) is shown apart, in words: its bar would dwarf the rest.
  // Memoised on the series: the chat re-renders this tab with every streamed token, and the
  // chart must redraw only when a reading arrives.
  const t = useMemo(() => series.tokens.filter((p) => !p.prefill), [series.tokens]);
  const timeline = useMemo(
    () => [
      t.map((p) => p.seq),
      t.map((p) => p.computeMs + p.expertWaitMs + p.trunkWaitMs),
      t.map((p) => p.expertWaitMs + p.trunkWaitMs),
      t.map((p) => p.trunkWaitMs),
      t.map((p) => (p.expertRequests ? (p.trueHits / p.expertRequests) * 100 : null)),
    ] as uPlot.AlignedData,
    [t],
  );
  const reads = useMemo(() => [series.at, series.readRate, series.at.map(() => drive)] as uPlot.AlignedData, [series, drive]);
  const avg = averages(series.tokens);
  const spare = d?.pressure ? d.pressure.spareBytes : d ? Math.max(0, d.system.availableBytes - Math.max(0, (d.planBytes ?? 0) - (d.rssBytes ?? 0))) : null;
  const lines = advice(avg, { driveBytesPerS: drive, spareBytes: spare, pinnedLayers: d?.pinnedLayers ?? 0, layers: d?.layers ?? 0 });
  const prefill = series.tokens.filter((p) => p.prefill).at(-1);
  const rate = recentRate(series.readRate);
  // The newest reply's totals over its tokens (checked against its saved stats by the e2e test).
  const lastJob = series.tokens.at(-1)?.job;
  const jobTokens = series.tokens.filter((p) => p.job === lastJob);
  const jobBytes = jobTokens.reduce((a, p) => a + p.trunkBytes + p.expertBytes, 0);
  return (
    <section class="dashboard" aria-labelledby="disk-title" data-testid="disk-tab">
      <DashHead id="disk-title" title="Disk and time per token" view="disk" />
      {error && <p class="dash-error" role="alert">{error}</p>}
      <Activity d={d} />
      {avg && (
        <p class="dash-figures" data-testid="token-figures" data-job={lastJob} data-job-tokens={jobTokens.length} data-job-bytes={jobBytes}>
          last {avg.tokens} tokens: <strong>{(avg.wallMs / 1000).toPrecision(3)} s/token</strong> · trunk wait {Math.round(avg.trunkWaitMs)} ms · expert wait{" "}
          {Math.round(avg.expertWaitMs)} ms · compute {Math.round(avg.computeMs)} ms · read {formatGB(avg.trunkBytes + avg.expertBytes)}/token ·{" "}
          {avg.trueHitRate === null ? "no expert requests" : `true hit rate ${formatPercent(avg.trueHitRate)}`}
          {prefill && <> · last prefill + first token {(prefill.wallMs / 1000).toPrecision(3)} s (not charted)</>}
        </p>
      )}
      <Chart options={timelineOptions} data={timeline} height={200} label="Per-token timeline: I/O wait on trunk and experts, compute, true hit rate" />
      <p class="dash-legend">
        <span class="swatch chart-trunk" aria-hidden="true" /> I/O wait: trunk <span class="swatch chart-experts" aria-hidden="true" /> I/O wait: experts{" "}
        <span class="swatch chart-compute" aria-hidden="true" /> compute (wall − wait) <span class="swatch chart-hit" aria-hidden="true" /> true hit rate
      </p>
      <ul class="advice" aria-label="Advice" data-testid="advice">
        {lines.map((l) => <li key={l}>{l}</li>)}
      </ul>
      {d && (
        <p class="dash-figures" data-testid="read-figures">
          reading at <strong>{rate === null ? "—" : `${(rate / 1e6).toFixed(0)} MB/s`}</strong> (last 2 s)
          {drive ? ` of ${(drive / 1e6).toFixed(0)} MB/s (speed test)` : " (run the speed test for the drive's best)"} · reads in flight{" "}
          {d.readsInFlight ?? "—"} · read since load {formatGB(d.trunkBytesRead)} trunk + {formatGB(d.expertBytesRead)} experts
        </p>
      )}
      <Chart key={String(drive)} options={() => readChartOptions(drive)} data={reads} sparseX={lastHalfMinute} height={150} label="Read rate against the drive's speed test" />
      <h3>Space per drive</h3>
      <Drives drives={drives} />
    </section>
  );
}
