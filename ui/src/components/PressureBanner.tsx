// The memory-pressure guard in the window: while a reply runs, the backend's verdict is read once
// a second; when other programs squeeze memory below what the plan still needs (or PSI shows
// stalls), a banner says so with the figures and offers a one-click step-down to a smaller preset,
// applied after the reply in progress (the engine replans only between generations).
// Owns: that polling (only while busy) and the banner. The rule itself is the backend's
// (app/src/dashboard/pressure.rs).
import { useEffect, useState } from "preact/hooks";
import type { PresetName, PressureWarning } from "../generated/ipc";
import * as engine from "../api/engine";
import { formatGB } from "../state/format";

export const PRESSURE_EVERY_MS = 1000;
/** Asking for tokens after this skips the timeline: the guard wants only the verdict. */
const NO_TOKENS = Number.MAX_SAFE_INTEGER;

export function PressureBanner({ busy }: { busy: boolean }) {
  const [warning, setWarning] = useState<PressureWarning | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  useEffect(() => {
    if (!busy) return;
    const read = () => engine.dashboard(NO_TOKENS).then((d) => setWarning(d.pressure), () => undefined);
    void read();
    const t = setInterval(() => void read(), PRESSURE_EVERY_MS);
    return () => clearInterval(t);
  }, [busy]);
  if (!warning) return null;
  const stepDown = async (name: string) => {
    setStatus(`Switching to ${name} after this reply…`);
    try {
      const r = await engine.applyMemory({ kind: "preset", name: name as PresetName }, () => undefined);
      setStatus(`Now on ${name}: ${r.model.memory}`);
      setWarning(null);
    } catch (e) {
      setStatus((e as { message: string }).message);
    }
  };
  const short = warning.spareBytes < 0 ? `short by ${formatGB(-warning.spareBytes)}` : `${formatGB(warning.spareBytes)} spare`;
  return (
    <div class="banner pressure-banner" role="alert" data-testid="pressure-banner">
      <p>
        Memory is running short: {formatGB(warning.availableBytes)} available, the plan may still take {formatGB(warning.planGrowthBytes)} ({short}; the guard
        keeps {formatGB(warning.minSpareBytes)})
        {warning.pressure !== null && `, and the system reports memory pressure: ${warning.pressure}`}.
        Other programs are taking memory the plan counted on; the system may start swapping.
      </p>
      {warning.stepDown ? (
        <button type="button" onClick={() => void stepDown(warning.stepDown!)}>
          Step down to {warning.stepDown} ({formatGB(warning.stepDownPlanBytes ?? 0)})
        </button>
      ) : (
        <p>No smaller preset helps: close other programs.</p>
      )}
      {status && <p role="status">{status}</p>}
    </div>
  );
}
