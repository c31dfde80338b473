// The memory-pressure guard in the window: while a reply runs, the backend's verdict is read once
// a second; when other programs squeeze memory below what the plan still needs (or PSI shows
// stalls), a banner says so with the figures and offers a one-click step-down to a smaller preset,
// applied after the reply in progress (the engine replans only between generations).
// Owns: the banner. The polling (only while busy) and the step-down are controllers/pressure.ts's;
// the rule itself is the backend's (app/src/dashboard/pressure.rs).
import { usePressure } from "../controllers/pressure";
import { formatGB } from "../state/format";

export function PressureBanner({ busy }: { busy: boolean }) {
  const { warning, status, stepDown } = usePressure(busy);
  if (!warning) return null;
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
