// End-to-end test of the setup wizard in the real window (Xvfb + tauri-driver + WebKitWebDriver),
// against the fake Hugging Face hub on 127.0.0.1 (HF_ENDPOINT, serving the tiny same-graph model as
// K3APP_REPO): fresh data folder → the wizard appears → hardware and drives show this machine's
// numbers → the speed test runs on the store folder → a preset is chosen → the download starts,
// the hub drops the connection once and the window shows the retry → the app is killed (SIGKILL)
// mid-download and relaunched: the wizard resumes with the bytes kept → verify → pack → load → a
// chat on the downloaded model answers with the demo model's exact greedy reply. Screenshots of
// every step go to target/e2e-screenshots/setup-*.png, the figures to setup-timings.json.
//
// Usage: node e2e/setup.e2e.mjs /absolute/path/to/k3-desktop STORE_DIR   (tauri-driver on 127.0.0.1:4444)
import { writeFileSync } from 'node:fs';
import { SHOTS as shots, askGolden, check, journey, killApp, screenshot } from './harness.mjs';
import { WebDriver } from './webdriver.mjs';

const app = process.argv[2];
const store = process.argv[3];
const base = process.env.WEBDRIVER_URL || 'http://127.0.0.1:4444';
const timings = {};

async function shot(d, name) {
  await screenshot(d, `setup-${name}`);
}

let d = null;
const run = journey(async () => {
  await shot(d, 'failure.png');
  console.log(`window text: ${await d.exec('return document.body.innerText.slice(0, 2000);')}`);
});
const step = run.step;

const stepOf = (d) => d.exec(`const w = document.querySelector('.wizard'); return w ? w.dataset.step : null;`);

async function atStep(d, want, timeoutMs = 30000) {
  await d.until(`the wizard at ${want}`, async () => (await stepOf(d)) === want, timeoutMs);
}

async function clickText(d, text) {
  const ok = await d.exec(
    `const b = [...document.querySelectorAll('.wizard button')].find(b => b.textContent.trim() === arguments[0] && !b.disabled);
     if (!b) return false; b.click(); return true;`,
    [text],
  );
  check(ok, `no enabled button "${text}"`);
}

async function typeInto(d, css, value) {
  const field = await d.find(css);
  await d.clear(field);
  await d.type(field, value);
}

d = await WebDriver.start(base, app);
let relaunchMs = 0;

try {
  await step('a fresh install opens the wizard on Welcome', async () => {
    await d.until('the wizard', async () => (await d.findAll('.wizard')).length === 1, 60000);
    await atStep(d, 'welcome');
    await shot(d, '01-welcome.png');
    await clickText(d, 'Start');
  });

  await step('hardware shows this machine with verdicts', async () => {
    await atStep(d, 'hardware');
    await d.until('the cards', async () => (await d.findAll('.card[data-item=cpu]')).length === 1);
    const cpu = await d.exec(`return document.querySelector('.card[data-item=cpu]').textContent;`);
    check(/cores/.test(cpu), `cpu card: ${cpu}`);
    const mem = await d.exec(`return document.querySelector('.card[data-item=memory]').textContent;`);
    check(/GB total/.test(mem), `memory card: ${mem}`);
    await shot(d, '02-hardware.png');
    await clickText(d, 'Next');
  });

  await step('drives lists the volumes; the store folder is chosen', async () => {
    await atStep(d, 'drives');
    await d.until('the drive table', async () => (await d.findAll('table.drives tbody tr')).length >= 1);
    await typeInto(d, 'input[name=store]', store);
    await shot(d, '03-drives.png');
    await clickText(d, 'Next');
  });

  await step('the speed test measures the drive at QD1 and QD16', async () => {
    await atStep(d, 'speedTest');
    await clickText(d, 'Run the speed test');
    await d.until('both figures and the best pattern', async () => (await d.findAll('table.speed tr')).length === 3, 120000);
    const text = await d.exec(`return document.querySelector('table.speed').textContent;`);
    check(/MB\/s/.test(text) && /experts\/s/.test(text) && /NVMe/.test(text), `speed: ${text}`);
    check(/\d+ MiB × \d+ in flight/.test(text), `best pattern: ${text}`);
    await shot(d, '04-speed-test.png');
    await clickText(d, 'Next');
  });

  await step('presets are planned and forecast; auto is preselected', async () => {
    await atStep(d, 'preset');
    await d.until('the preset table', async () => (await d.findAll('table.presets tbody tr')).length >= 6, 60000);
    const auto = await d.exec(`return document.querySelector('input[name=preset][value=auto]').checked;`);
    check(auto, 'auto is not preselected');
    await shot(d, '05-presets.png');
    await clickText(d, 'Next');
    // A one-second test on a small scratch file may forecast "too slow": the warning is shown
    // with its number and a person may continue anyway.
    const warned = await d
      .until('the next step or a warning', async () => {
        if ((await stepOf(d)) === 'download') return 'moved';
        return (await d.findAll('.blockers li')).length > 0 ? 'warned' : null;
      }, 30000);
    if (warned === 'warned') {
      await shot(d, '05b-preset-warning.png');
      await clickText(d, 'Continue anyway');
    }
  });

  await step('the download runs; a dropped connection shows as a retry', async () => {
    await atStep(d, 'download');
    await d.until('file cells', async () => (await d.findAll('.grid .cell')).length >= 10, 30000);
    await d.until('the retry line', async () => (await d.findAll('.retry')).length === 1, 30000);
    // Sleep is inhibited while the job runs, or the window says why it could not be.
    const awakeLine = await d.find('[data-testid=awake]');
    const awake = await d.text(awakeLine);
    check(/kept awake until this finishes|may go to sleep meanwhile/.test(awake), `awake line: ${awake}`);
    timings.keepAwake = `${awake} ${(await d.exec(`return document.querySelector('[data-testid=awake]').title;`)) || ''}`.trim();
    await shot(d, '06-download.png');
    const t0 = Date.now();
    const e0 = await d.exec(`return Number(document.querySelector('[data-events]').dataset.events);`);
    await new Promise((r) => setTimeout(r, 3000));
    const e1 = await d.exec(`return Number(document.querySelector('[data-events]').dataset.events);`);
    timings.setupEventsPerSecond = ((e1 - e0) * 1000) / (Date.now() - t0);
    check(timings.setupEventsPerSecond <= 12, `the window redrew ${timings.setupEventsPerSecond} times a second`);
  });

  await step('killed mid-download (SIGKILL) and relaunched, the wizard resumes with the bytes kept', async () => {
    await killApp(d, app);
    const t0 = Date.now();
    d = await WebDriver.start(base, app);
    await d.until('the wizard at download', async () => (await d.findAll('.wizard[data-step=download]')).length === 1, 60000);
    const resume = await d.until('the resume line', async () => {
      const r = await d.findAll('.resume');
      return r.length === 1 ? r[0] : null;
    }, 30000);
    relaunchMs = Date.now() - t0;
    timings.relaunchToResumedDownloadMs = relaunchMs;
    const text = await d.text(resume);
    check(/Resuming: .* of .* kept/.test(text), `resume line: ${text}`);
    await shot(d, '07-resumed.png');
  });

  await step('verify, pack and first load reach Ready, then the chat answers on the downloaded model', async () => {
    await d.until('the wizard to close on Ready', async () => (await d.findAll('.wizard')).length === 0, 180000);
    const bar = await d.exec(`return document.querySelector('.topbar').textContent;`);
    check(!/demo/i.test(bar), `still on the demo model: ${bar}`);
    await shot(d, '08-ready-chat.png');
    // The same weights as the bundled demo (every byte hashed), here streamed from the packed
    // trunk at the chosen preset: the reply must be the demo's, token for token.
    await askGolden(d);
    await shot(d, '09-first-reply.png');
  });
} finally {
  writeFileSync(`${shots}setup-timings.json`, JSON.stringify(timings, null, 2));
  await d.quit().catch(() => undefined);
  console.log(run.summary());
  if (run.failed > 0) process.exitCode = 1;
}
