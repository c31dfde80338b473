// End-to-end test of "I already have the files" in the real window: a fresh data folder, the
// wizard's Welcome → "I already have the files" on a folder that holds the tiny checkpoint (a
// plain copy, no manifest) → every file is hashed in place against the fake hub's pinned listing
// and nothing is fetched (each file is still the same inode, size and mtime) → pack → first load → Ready → the chat answers with the
// demo model's exact greedy reply. Screenshots go to target/e2e-screenshots/adopt-*.png.
//
// Usage: node e2e/adopt.e2e.mjs /absolute/path/to/k3-desktop FOLDER   (tauri-driver on 127.0.0.1:4444)
import { readdirSync, statSync } from 'node:fs';
import { askGolden, check, journey, screenshot, openSettings } from './harness.mjs';
import { WebDriver } from './webdriver.mjs';

const app = process.argv[2];
const folder = process.argv[3];
const base = process.env.WEBDRIVER_URL || 'http://127.0.0.1:4444';
const shot = (d, name) => screenshot(d, `adopt-${name}`);

/** Inode, size and modification time of each checkpoint file in the folder. */
const identities = () =>
  Object.fromEntries(
    readdirSync(folder)
      .filter((n) => n.endsWith('.safetensors') || n.endsWith('.json'))
      .map((n) => {
        const st = statSync(`${folder}/${n}`);
        return [n, `${st.ino}:${st.size}:${st.mtimeMs}`];
      }),
  );
let before = null;
let d = null;
const run = journey(async () => {
  await shot(d, 'failure.png');
  console.log(`window text: ${await d.exec('return document.body.innerText.slice(0, 2000);')}`);
});

d = await WebDriver.start(base, app);
try {
  await run.step('"I already have the files" adopts the folder and reaches Ready without downloading', async () => {
    await d.until('the wizard at welcome', async () => (await d.findAll('.wizard[data-step=welcome]')).length === 1, 60000);
    await d.click(await d.find('.wizard-actions button[aria-expanded]'));
    before = identities();
    const field = await d.until('the folder field', async () => (await d.findAll('input[name=adopt]'))[0]);
    await d.type(field, folder);
    await shot(d, '01-folder.png');
    const used = await d.exec(
      `const b = [...document.querySelectorAll('.adopt button')].find(b => b.textContent.trim() === 'Use these files');
       if (!b || b.disabled) return false; b.click(); return true;`,
    );
    check(used, 'no enabled "Use these files" button');
    await shot(d, '02-adopting.png');
    await d.until('the wizard to close on Ready', async () => (await d.findAll('.wizard')).length === 0, 180000);
    const bar = await d.exec(`return document.querySelector('.topbar').textContent;`);
    check(!/demo/i.test(bar), `still on the demo model: ${bar}`);
    // Nothing was fetched: every file of the folder is the same file, never rewritten.
    const after = identities();
    for (const [name, id] of Object.entries(before)) check(after[name] === id, `${name} was replaced: ${id} → ${after[name]}`);
    await askGolden(d);
    await shot(d, '03-ready-reply.png');
  });
  await run.step('settings › model folder: the adopted files are verified, and "Verify now" hashes them again', async () => {
    await openSettings(d, 'Model folder');
    const verified = await d.until('the verified count', async () => d.text(await d.find('[data-testid=verified-files]')), 20000);
    const [, ok, all] = verified.match(/^(\d+) of (\d+) files/) ?? [];
    check(all && ok === all && Number(all) > 0, `verified: ${verified}`);
    const verify = await d.until('Verify now', async () =>
      (await d.findAll('[data-testid=model-folder] .settings-actions button.primary'))[0]);
    await d.click(verify);
    const outcome = await d.until('the verify outcome', async () => d.text(await d.find('[data-testid=verify-outcome]')), 120000);
    check(outcome.startsWith(`All ${all} files`), `verify: ${outcome}`);
    await shot(d, '04-model-folder-verified.png');
    await d.click(await d.find('button[aria-label="Close settings"]'));
  });
} finally {
  await d.quit().catch(() => undefined);
  console.log(run.summary());
  if (run.failed > 0) process.exitCode = 1;
}
