// The Drives step: this machine's volumes with a verdict each, and the folders for the model store
// and the trunk (saved with Check again or Next).
import { useState } from "preact/hooks";
import { ofTotal } from "../../state/wizard";
import { useMachine } from "../../controllers/wizard";
import { CodeSpans } from "../CodeSpans";
import type { StepProps } from "./stepProps";

export function Drives({ settings, next, choose, calls }: StepProps) {
  const [store, setStore] = useState(settings.storeDir ?? "");
  const [trunk, setTrunk] = useState(settings.trunkDir ?? "");
  const [view, again] = useMachine(settings.storeDir, calls);
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
                <td>{ofTotal(d.freeBytes, d.totalBytes)}</td>
                <td>
                  <CodeSpans text={d.message} />
                </td>
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
