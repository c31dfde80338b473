// The Preset step: each memory preset planned for this machine (layers in RAM, peak memory, headroom,
// default context, seconds per token), the chosen one, and a warning when it does not fit.
import { useEffect, useState } from "preact/hooks";
import type { PresetRow } from "../../generated/ipc";
import { chosenPreset, presetCells, presetToSave, presetWarning } from "../../state/wizard";
import type { StepProps } from "./stepProps";

export function Presets({ settings, next, choose, calls }: StepProps) {
  const [rows, setRows] = useState<PresetRow[] | null>(null);
  useEffect(() => {
    void calls.forecast().then((r) => r && setRows(r));
  }, []);
  const chosen = chosenPreset(settings);
  const pick = (name: string) => void choose({ preset: name });
  const proceed = () => {
    const save = presetToSave(settings);
    return save === null ? next() : choose({ preset: save }).then(next);
  };
  const warning = presetWarning(rows, chosen);
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
            {rows.map((r) => {
              const c = presetCells(r);
              return (
                <tr key={r.name} class={r.fits ? "" : "red"}>
                  <td>
                    <input type="radio" name="preset" value={r.name} checked={r.name === chosen} onChange={() => pick(r.name)} aria-label={r.name} />
                  </td>
                  <td>{r.name}</td>
                  <td>{c.layers}</td>
                  <td>{r.expertSlots}</td>
                  <td>{c.peak}</td>
                  <td>{c.headroom}</td>
                  <td title={c.contextTitle}>{c.context}</td>
                  <td>{c.seconds}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {warning && <p class="card amber">{warning}</p>}
      <div class="wizard-actions">
        <button type="button" class="primary" onClick={() => void proceed()} disabled={!rows}>
          Next
        </button>
      </div>
    </div>
  );
}
