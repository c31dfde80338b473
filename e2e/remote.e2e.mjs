// End-to-end test of a remote backend in the real window: Settings › Backends adds `k3 serve` on
// 127.0.0.1 (with an API key) and "Test" shows its reply time; a new chat set to "Answered by" that
// backend shows "Prompts leave this machine — host", answers with the demo model's exact greedy reply
// (the chat journey's golden text: the server runs the same weights), and its stats are the remote's
// (host, tokens, timing; no I/O figures). The same request sent with curl is timed beside it: the
// app's overhead over a raw stream goes to target/e2e-screenshots/remote-timings.json.
// Screenshots go to target/e2e-screenshots/remote-*.png.
//
// Usage: node e2e/remote.e2e.mjs /absolute/path/to/k3-desktop BASE_URL KEY   (tauri-driver on 127.0.0.1:4444)
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { GOLDEN, SHOTS, check, journey, messages, openSettings, screenshot, setGreedyMaxTokens } from './harness.mjs';
import { KEYS, WebDriver } from './webdriver.mjs';

const [app, baseUrl, key] = process.argv.slice(2);
const base = process.env.WEBDRIVER_URL || 'http://127.0.0.1:4444';
const host = new URL(baseUrl).host;
const shot = (d, name) => screenshot(d, `remote-${name}`);
const golden = JSON.parse(readFileSync(GOLDEN.file, 'utf8'));

let d = null;
const run = journey(async () => {
  await shot(d, 'failure.png');
  console.log(`window text: ${await d.exec('return document.body.innerText.slice(0, 2000);')}`);
});

/** The timed reply's token limit (the demo model ends its reply before it; the stats line says
 * how many it wrote, and curl asks for the same). */
const TIMED_TOKENS = 400;

/** Seconds curl takes for the same streamed request (the raw stream, no app). */
function curlSeconds() {
  const body = JSON.stringify({
    model: 'k3-demo',
    messages: [{ role: 'user', content: golden.prompt }],
    max_tokens: TIMED_TOKENS,
    temperature: 0,
    top_p: 1,
    stream: true,
    stream_options: { include_usage: true },
  });
  const out = execFileSync('curl', ['-sN', '-o', '/dev/null', '-w', '%{time_total}', '-H', `Authorization: Bearer ${key}`,
    '-H', 'Content-Type: application/json', '-d', body, `${baseUrl}/chat/completions`], { encoding: 'utf8' });
  return Number(out);
}

d = await WebDriver.start(base, app);
try {
  await run.step('settings › backends: add k3 serve with a key, and Test shows its reply time', async () => {
    // As the chat journey: the demo model loaded, then the fresh install's wizard closed.
    await d.until('the composer and the demo banner', async () => (await d.findAll('[data-testid=demo-banner]')).length === 1, 60000);
    if ((await d.findAll('.wizard')).length > 0) {
      await d.click(await d.find('[data-testid=try-demo]'));
      await d.until('the wizard to close', async () => (await d.findAll('.wizard')).length === 0);
    }
    await openSettings(d, 'Backends');
    await d.until('the backends section', async () => (await d.findAll('[data-testid=backend-settings]')).length === 1);
    await d.type(await d.find('[data-testid=backend-name]'), 'Loopback k3 serve');
    await d.type(await d.find('[data-testid=backend-url]'), baseUrl);
    await d.type(await d.find('[data-testid=backend-key]'), key);
    await d.type(await d.find('[data-testid=backend-model]'), 'k3-demo');
    await d.click(await d.find('[data-testid=backend-add]'));
    const row = await d.until('the added backend', async () => (await d.findAll('[data-testid=backend-list] li'))[0], 10000);
    const words = await d.text(row);
    check(words.includes(host) && /key in (the system keyring|a file only you can read)/.test(words), `row: ${words}`);
    await d.click(await d.find('[data-testid=backend-test]'));
    const result = await d.until('the test result', async () => {
      const r = await d.findAll('[data-testid=backend-test-result]');
      return r.length ? d.text(r[0]) : null;
    }, 60000);
    check(/^Replied in [\d.]+ (ms|s): /.test(result) && result.includes('k3-demo'), `test: ${result}`);
    await shot(d, '01-backends.png');
    // Settings › New chats offers it as the default for new chats (left on this computer here).
    // The sheet is open: pick the section from its own list.
    await d.exec(`[...document.querySelectorAll('.app-settings-nav button')].find(b => b.textContent === 'New chats').click();`);
    const offered = await d.until('the default-backend choice', async () =>
      d.exec(`const s = document.querySelector('[data-testid=default-backend]'); return s ? [...s.options].map(o => o.textContent).join(' | ') : null;`), 10000);
    check(offered.startsWith('This computer') && offered.includes(host), `new chats answered by: ${offered}`);
    await shot(d, '01b-new-chats-default.png');
    await d.click(await d.find('button[aria-label="Close settings"]'));
  });

  await run.step('a chat answered by the backend says where prompts go and answers with the golden reply', async () => {
    await d.click(await d.find('button[aria-label="New chat"]'));
    await d.until('an empty conversation', async () => (await messages(d)).length === 0);
    await setGreedyMaxTokens(d, golden.maxTokens);
    const picked = await d.exec(
      `const s = document.querySelector('[data-testid=backend-picker]'); if (!s) return null;
       const o = [...s.options].find(o => o.textContent.includes(arguments[0])); if (!o) return null;
       s.value = o.value; s.dispatchEvent(new Event('change', { bubbles: true })); return o.value;`,
      [host],
    );
    check(picked, 'no "Answered by" choice for the backend');
    const marker = await d.until('the remote marker naming the host', async () => {
      const m = await d.findAll('[data-testid=remote-marker]');
      const text = m.length ? await d.text(m[0]) : '';
      return text.includes(host) ? text : null;
    }, 10000);
    check(marker === `Prompts leave this machine — ${host}`, `marker: ${marker}`);
    await shot(d, '02-marker.png');
    const composer = await d.find('#composer');
    await d.type(composer, golden.prompt);
    await d.type(composer, KEYS.enter);
    await d.until('a finished reply', async () => (await d.findAll('.message[data-role=assistant][data-status=complete]')).length === 1, 120000);
    const reply = (await messages(d)).find((m) => m.role === 'assistant');
    check(reply.text === golden.text, `the remote reply differs from the demo model's:\n${reply.text}\n---\n${golden.text}`);
    const stats = await d.text(await d.find('.message[data-role=assistant] .stats'));
    check(stats.includes(`answered by ${host}`) && !/I\/O|read |hit rate/.test(stats), `stats: ${stats}`);
    const badge = await d.findAll('[data-testid=remote-badge]');
    check(badge.length === 1, 'the sidebar does not mark the remote conversation');
    await shot(d, '03-reply.png');
  });

  await run.step('the app over a raw curl of the same stream: timed', async () => {
    // A new chat with the same prompt, TIMED_TOKENS greedy tokens; in-page marks of the Enter key
    // and of the saved reply appearing (a MutationObserver, not WebDriver's polling).
    await d.click(await d.find('button[aria-label="New chat"]'));
    await d.until('an empty conversation', async () => (await messages(d)).length === 0);
    await setGreedyMaxTokens(d, TIMED_TOKENS);
    await d.exec(
      `const s = document.querySelector('[data-testid=backend-picker]'); const o = [...s.options].find(o => o.textContent.includes(arguments[0]));
       s.value = o.value; s.dispatchEvent(new Event('change', { bubbles: true }));`,
      [host],
    );
    await d.until('the remote marker', async () => (await d.findAll('[data-testid=remote-marker]')).length === 1, 10000);
    await d.exec(`
      const k = (window.__remote = {});
      document.addEventListener('keydown', (e) => { if (e.key === 'Enter' && e.target.id === 'composer' && k.sent === undefined) k.sent = performance.now(); }, true);
      new MutationObserver(() => {
        if (k.sent !== undefined && k.done === undefined && document.querySelector('.message[data-role=assistant][data-status]:not([data-status=streaming])')) k.done = performance.now();
      }).observe(document.body, { subtree: true, childList: true, attributes: true });`);
    const composer = await d.find('#composer');
    await d.type(composer, golden.prompt);
    await d.type(composer, KEYS.enter);
    await d.until('the timed reply', async () => d.exec('return window.__remote.done !== undefined;'), 120000);
    const windowMs = await d.exec('return window.__remote.done - window.__remote.sent;');
    const stats = await d.text(await d.find('.message[data-role=assistant] .stats'));
    const written = Number(stats.match(/(\d+) output tokens/)?.[1]);
    check(written > 0 && written <= TIMED_TOKENS, `stats: ${stats}`);
    const appTotal = stats.match(/total ([\d.,]+ (ms|s))/)?.[1];
    const curls = [curlSeconds(), curlSeconds(), curlSeconds()].map((s) => Math.round(s * 1000)).sort((a, b) => a - b);
    const timings = { tokens: written, windowEnterToSavedReplyMs: Math.round(windowMs), appStatsTotal: appTotal, curlMs: curls };
    writeFileSync(`${SHOTS}remote-timings.json`, `${JSON.stringify(timings, null, 2)}\n`);
    console.log(`remote timings: ${JSON.stringify(timings)}`);
    await shot(d, '04-timed.png');
  });

  await run.step('back to this computer: the marker goes, and the choice is the user\'s per conversation', async () => {
    const badges = (await d.findAll('[data-testid=remote-badge]')).length;
    check(badges === 2, `${badges} conversations marked remote, expected the 2 of this journey`);
    await d.exec(
      `const s = document.querySelector('[data-testid=backend-picker]'); s.value = '';
       s.dispatchEvent(new Event('change', { bubbles: true }));`,
    );
    await d.until('the marker to go', async () => (await d.findAll('[data-testid=remote-marker]')).length === 0, 10000);
    await d.until('this chat\'s badge to go', async () => (await d.findAll('[data-testid=remote-badge]')).length === 1, 10000);
    await shot(d, '05-back-to-this-computer.png');
  });
} finally {
  await d.quit().catch(() => undefined);
  console.log(run.summary());
  if (run.failed > 0) process.exitCode = 1;
}
