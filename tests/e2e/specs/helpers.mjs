// Shared helpers for the e2e specs (not a spec itself: the glob only takes *.e2e.mjs).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** An env var the run script must set; fails the test with a clear message otherwise. */
export function requireEnv(name) {
  const v = process.env[name];
  assert.ok(v, `${name} is not set: run the e2e tests through tests/e2e/run.sh`);
  return v;
}

/** Writes `samples` (-1..1) as a mono 16-bit PCM WAV at `rate`. */
function writeWav16(file, samples, rate) {
  const buf = Buffer.alloc(44 + samples.length * 2);
  buf.write('RIFF', 0);
  buf.writeUInt32LE(36 + samples.length * 2, 4);
  buf.write('WAVEfmt ', 8);
  buf.writeUInt32LE(16, 16);
  buf.writeUInt16LE(1, 20); // PCM
  buf.writeUInt16LE(1, 22); // mono
  buf.writeUInt32LE(rate, 24);
  buf.writeUInt32LE(rate * 2, 28);
  buf.writeUInt16LE(2, 32);
  buf.writeUInt16LE(16, 34);
  buf.write('data', 36);
  buf.writeUInt32LE(samples.length * 2, 40);
  samples.forEach((x, i) => buf.writeInt16LE(Math.round(32767 * x), 44 + i * 2));
  fs.writeFileSync(file, buf);
  return file;
}

/** Writes a mono 16-bit WAV of a sine (node side, for specs that need their own audio). */
export function writeSineWav(file, { seconds, freq, amplitude = 0.5, rate = 44100 }) {
  const samples = Float64Array.from({ length: Math.round(seconds * rate) }, (_, i) =>
    amplitude * Math.sin((2 * Math.PI * freq * i) / rate),
  );
  return writeWav16(file, samples, rate);
}

/**
 * Writes a mono 16-bit WAV of speech-like audio (node side), as `timbre_audio::signal::speech_like`
 * makes it: words of two to four syllables with pauses between them, each syllable a harmonic
 * tone gliding in pitch through three formant resonators of a vowel, peaking at 0.5. Unlike a
 * sine, a voice activity detector hears speech in it (the checkpoint judge's speaker encoder
 * embeds only speech).
 */
export function writeSpeechWav(file, { seconds, rate = 44100, seed = 3 }) {
  // mulberry32: a small seeded generator, so every run writes the same audio.
  let state = seed >>> 0;
  const uniform = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const between = (lo, hi) => lo + (hi - lo) * uniform();
  const vowels = [[730, 1090, 2440], [530, 1840, 2480], [270, 2290, 3010], [570, 840, 2410], [300, 870, 2240]];
  const frames = (secs) => Math.round(secs * rate);
  const samples = new Float64Array(frames(seconds));
  const syllable = (start, end, f0, ratio, formants) => {
    const resonators = formants.map((f) => {
      const r = Math.exp((-Math.PI * (60 + f * 0.06)) / rate);
      const theta = (2 * Math.PI * f) / rate;
      return { a1: -2 * r * Math.cos(theta), a2: r * r, gain: (1 - r) * Math.sqrt(1 - 2 * r * Math.cos(2 * theta) + r * r), y1: 0, y2: 0 };
    });
    const gains = [1, 0.7, 0.35];
    let phase = 0;
    const len = end - start;
    for (let i = 0; i < len; i++) {
      const position = i / len;
      const pitch = f0 * ratio ** position;
      phase = (phase + pitch / rate) % 1;
      const harmonics = Math.min(40, Math.floor((0.45 * rate) / pitch));
      let source = 0;
      for (let k = 1; k <= harmonics; k++) source += Math.sin(2 * Math.PI * phase * k) / k;
      let voiced = 0;
      resonators.forEach((res, j) => {
        const y = res.gain * source - res.a1 * res.y1 - res.a2 * res.y2;
        res.y2 = res.y1;
        res.y1 = y;
        voiced += gains[j] * y;
      });
      samples[start + i] = voiced * Math.sin(Math.PI * position) ** 0.6;
    }
  };
  let at = 0.3;
  words: for (;;) {
    const count = 2 + Math.floor(uniform() * 3);
    for (let n = 0; n < count; n++) {
      const length = between(0.12, 0.28);
      if (at + length > seconds - 0.3) break words;
      syllable(frames(at), frames(at + length), between(100, 180), between(0.85, 1.25), vowels[Math.floor(uniform() * vowels.length)]);
      at += length + between(0.03, 0.07);
    }
    at += between(0.25, 0.6);
  }
  const peak = samples.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
  return writeWav16(file, samples.map((x) => (peak > 0 ? (0.5 * x) / peak : 0)), rate);
}

/** The file name without its extension, as the importer names takes. */
export function stem(p) {
  return path.basename(p, path.extname(p));
}

export const byTestId = (id) => `[data-testid="${id}"]`;

/**
 * Calls a backend command through the same IPC the UI uses. Resolves with its value, or
 * throws an Error carrying the backend's error (kind and message) when it rejects.
 */
export async function invoke(cmd, args = {}) {
  const r = await browser.execute(
    async (cmd, args) => {
      try {
        return { ok: true, value: await window.__TAURI_INTERNALS__.invoke(cmd, args) };
      } catch (e) {
        return { ok: false, error: typeof e === 'string' ? e : JSON.stringify(e) ?? String(e) };
      }
    },
    cmd,
    args,
  );
  if (!r || !r.ok) throw new Error(`invoke('${cmd}') failed: ${r ? r.error : 'no result'}`);
  return r.value;
}

/**
 * browser.waitUntil whose failure message is built when it fails (`message` may be an async
 * function), so it can show the state at that moment, e.g. the error banner.
 */
export async function waitFor(condition, { timeout = 15000, interval = 100, message = 'condition not met' } = {}) {
  try {
    await browser.waitUntil(condition, { timeout, interval });
  } catch (err) {
    if (!/timeout|timed out/i.test(String(err?.message))) throw err;
    const text = typeof message === 'function' ? await message() : message;
    throw new Error(`${text} (waited ${timeout / 1000} s)`);
  }
}

/** Waits until the webview has loaded the app and its IPC bridge. */
export async function waitForApp() {
  await browser.waitUntil(
    () => browser.execute(() => typeof window.__TAURI_INTERNALS__?.invoke === 'function' && document.readyState === 'complete'),
    { timeout: 30000, interval: 200, timeoutMsg: 'the app did not load (no Tauri IPC bridge after 30 s)' },
  );
  await $(byTestId('nav-library')).waitForDisplayed({ timeout: 30000 });
}

/** Opens a page through the sidebar and waits for its marker element. */
export async function openPage(page, marker) {
  await $(byTestId(`nav-${page}`)).click();
  await browser.waitUntil(
    async () => (await $(byTestId(`nav-${page}`)).getAttribute('aria-current')) === 'page',
    { timeout: 5000, timeoutMsg: `the ${page} nav item did not become current` },
  );
  if (marker) await $(marker).waitForExist({ timeout: 15000 });
}

export const TERMINAL_JOB_STATES = ['succeeded', 'failed', 'cancelled', 'interrupted'];

/**
 * The ceiling of a wait on backend work (a job, a training) reaching a state. The tests wait on
 * states, not times: how long the work takes depends on the machine and what else it runs, so
 * this is only what a hang reaches (run.sh's E2E_TIMEOUT bounds the whole run).
 */
export const BACKEND_WORK_TIMEOUT = 10 * 60 * 1000;

/** Polls list_jobs until the job is in a terminal state; returns it. */
export async function waitForJob(id, timeout = BACKEND_WORK_TIMEOUT) {
  let job;
  await waitFor(
    async () => {
      const jobs = await invoke('list_jobs');
      job = jobs.find((j) => j.id === id);
      return job && TERMINAL_JOB_STATES.includes(job.state);
    },
    { timeout, interval: 250, message: () => `job ${id} did not finish (last seen: ${JSON.stringify(job)})` },
  );
  return job;
}

/**
 * Imports voices as the Models page's form and a drop do (a `voice_import` job; `request` holds
 * `source` and any of `index`, `use_index`, `name`, `voice_id`) and returns the models imported.
 */
export async function importVoice(request) {
  const job = await waitForJob(await invoke('import_voice', { request }));
  assert.equal(job.state, 'succeeded', `the voice import of ${request.source} failed: ${job.error}`);
  return job.result.models;
}

/**
 * Inside the page: fetches a take's audio with `get_take_audio` and returns facts about it
 * (no bytes cross WebDriver): RIFF/WAVE header, byte length, and a Web Audio decode
 * (duration, sample rate, channels; of the first channel: RMS, peak, the frequency of a
 * pure tone from its zero crossings, and the fraction of near-zero samples).
 */
export async function inspectTakeAudio(id) {
  const r = await browser.execute(async (id) => {
    try {
      const raw = await window.__TAURI_INTERNALS__.invoke('get_take_audio', { id });
      const buf = raw instanceof ArrayBuffer ? raw : raw?.buffer instanceof ArrayBuffer ? raw.buffer : new Uint8Array(raw).buffer;
      const bytes = new Uint8Array(buf);
      const tag = (o) => String.fromCharCode(...bytes.slice(o, o + 4));
      const facts = { byteLength: bytes.length, riff: tag(0), wave: tag(8), type: Object.prototype.toString.call(raw) };
      const Ctor = window.AudioContext ?? window.webkitAudioContext;
      // An OfflineAudioContext decodes without needing an output device.
      const ctx = window.OfflineAudioContext ? new OfflineAudioContext(1, 1, 44100) : new Ctor();
      const audio = await new Promise((resolve, reject) => {
        const p = ctx.decodeAudioData(buf.slice(0), resolve, (e) => reject(e ?? new Error('decode failed')));
        if (p && typeof p.then === 'function') p.then(resolve, reject);
      });
      const ch = audio.getChannelData(0);
      let sum = 0;
      let peak = 0;
      let rises = 0; // upward zero crossings: one per period of a clean tone
      let silent = 0; // samples within a quantisation step of zero
      for (let i = 0; i < ch.length; i++) {
        sum += ch[i] * ch[i];
        peak = Math.max(peak, Math.abs(ch[i]));
        if (i > 0 && ch[i - 1] < 0 && ch[i] >= 0) rises++;
        if (Math.abs(ch[i]) < 1e-4) silent++;
      }
      return {
        ok: true,
        ...facts,
        duration: audio.duration,
        sampleRate: audio.sampleRate,
        channels: audio.numberOfChannels,
        rms: Math.sqrt(sum / Math.max(1, ch.length)),
        peak,
        frequency: rises / audio.duration,
        silentFraction: silent / Math.max(1, ch.length),
      };
    } catch (e) {
      return { ok: false, error: typeof e === 'string' ? e : `${e?.name ?? ''} ${e?.message ?? JSON.stringify(e)}` };
    }
  }, id);
  if (!r.ok) throw new Error(`get_take_audio(${id}) could not be inspected: ${r.error}`);
  return r;
}

/**
 * browser.saveScreenshot into `name` in the screenshot folder (E2E_SCREENSHOT_DIR, else the
 * run's temporary folder), made reliable: WebKitWebDriver waits for the next presentation
 * update, and an idle page under Xvfb may not paint for a minute. A short, invisible
 * repaint loop gives it one.
 */
export async function screenshot(name) {
  const dir = process.env.E2E_SCREENSHOT_DIR ?? requireEnv('E2E_TMP');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  await browser.execute(() => {
    const dot = document.createElement('div');
    dot.setAttribute('aria-hidden', 'true');
    dot.style.cssText = 'position:fixed;right:0;bottom:0;width:1px;height:1px;z-index:2147483647;pointer-events:none';
    document.body.appendChild(dot);
    let i = 0;
    const timer = setInterval(() => {
      dot.style.background = i++ % 2 ? 'rgba(0,0,0,0.01)' : 'rgba(0,0,0,0.02)';
      if (i > 100) {
        clearInterval(timer);
        dot.remove();
      }
    }, 30);
  });
  await browser.saveScreenshot(file);
}

/** The messages in the error banner (errors never go to toasts). */
export async function visibleErrors() {
  return browser.execute(() => [...document.querySelectorAll('[data-testid="error-message"]')].map((e) => e.textContent.trim()));
}

/** The texts of the (non-error) toasts currently shown. */
export async function toasts() {
  return browser.execute(() => [...document.querySelectorAll('[data-testid="toast"]')].map((e) => e.textContent.trim()));
}

/** Runs xdotool: real X input and window moves, what a user's mouse and window manager do. */
export const xdotool = (...args) => execFileSync('xdotool', args, { encoding: 'utf8', timeout: 20000 }).trim();

/**
 * Picks `file` in the native GTK file dialog titled `title` (an open or a save dialog), as a user's
 * keyboard would: WebDriver cannot reach a native dialog, so xdotool waits for it to show, focuses
 * it, opens its location bar (Ctrl+L), types the path over what is there and presses Return.
 */
export function answerFileDialog(title, file) {
  const dialog = xdotool('search', '--sync', '--onlyvisible', '--name', `^${title}$`).split('\n')[0];
  xdotool('windowfocus', '--sync', dialog);
  // Keys sent before GTK has set the dialog up are lost.
  xdotool('sleep', '0.5');
  xdotool('key', '--clearmodifiers', 'ctrl+l');
  xdotool('sleep', '0.3');
  // A save dialog's name field holds the offered name: the path replaces it.
  xdotool('key', '--clearmodifiers', 'ctrl+a');
  xdotool('type', '--delay', '15', file);
  xdotool('sleep', '0.3');
  xdotool('key', 'Return');
}

const catalogues = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..', '..', 'ui', 'src', 'lib', 'i18n', 'catalogues');

/** Every message of a locale's catalogues, as `area.key` → text (what the app's `t` reads). */
function messagesOf(locale) {
  const out = {};
  for (const file of fs.readdirSync(path.join(catalogues, locale))) {
    const area = path.basename(file, '.json');
    for (const [key, text] of Object.entries(JSON.parse(fs.readFileSync(path.join(catalogues, locale, file), 'utf8')))) {
      out[`${area}.${key}`] = text;
    }
  }
  return out;
}

/**
 * The `locale` text of the message whose English is `english` (a message without values):
 * what the UI shows in that language where it shows `english` in English.
 */
export function translated(english, locale) {
  const en = messagesOf('en');
  const keys = Object.keys(en).filter((k) => en[k] === english);
  assert.ok(keys.length > 0, `no catalogue message reads "${english}" in English`);
  const texts = [...new Set(keys.map((k) => messagesOf(locale)[k]))];
  assert.equal(texts.length, 1, `"${english}" is ${keys.join(', ')}, which ${locale} translates differently: ${texts.join(' | ')}`);
  return texts[0];
}

/** Switches the UI's language as the Settings page's Language menu does. */
export async function chooseLanguage(locale) {
  await openPage('settings', byTestId('setting-language'));
  await $(byTestId('setting-language')).selectByAttribute('value', locale);
  await waitFor(async () => (await browser.execute(() => document.documentElement.lang)) === locale, {
    timeout: 5000,
    message: `the UI did not switch to ${locale}`,
  });
}

const axeSource = fs.readFileSync(
  path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', 'node_modules', 'axe-core', 'axe.min.js'),
  'utf8',
);

/**
 * The serious and critical accessibility violations axe-core finds in the page as it is now:
 * `rule: help — target (why)` per element. axe is injected through WebDriver (the app's content
 * security policy allows no injected script tag).
 */
export async function axeViolations(context = 'document') {
  const injected = await browser.execute(() => typeof window.axe?.run === 'function');
  if (!injected) await browser.execute(`${axeSource}\n;window.axe = axe; return true;`);
  const result = await browser.execute(async (context) => {
    const root = context === 'document' ? document : document.querySelector(context);
    const r = await window.axe.run(root, { resultTypes: ['violations'] });
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .flatMap((v) => v.nodes.slice(0, 5).map((n) => `${v.id}: ${v.help} — ${n.target.join(' ')} (${n.failureSummary?.split('\n').slice(1, 3).join(' ').trim()})`));
  }, context);
  return result;
}

/**
 * Presses Tab (Shift+Tab when `back`) until the focused element matches `selector`, as a
 * keyboard user moves to a control; fails after `limit` presses. Returns how many it took.
 */
export async function tabTo(selector, { limit = 80, back = false } = {}) {
  for (let presses = 0; presses <= limit; presses++) {
    const here = await browser.execute((s) => document.activeElement?.matches(s) ?? false, selector);
    if (here) return presses;
    await browser.keys(back ? ['Shift', 'Tab'] : ['Tab']);
  }
  const at = await browser.execute(() => document.activeElement?.outerHTML.slice(0, 200));
  throw new Error(`${limit} presses of Tab did not reach ${selector} (focus is on ${at})`);
}

/** Whether the focused element shows where the focus is (an outline or a focus ring shadow). */
export async function focusIsVisible() {
  return browser.execute(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return false;
    const s = getComputedStyle(el);
    return (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || (s.boxShadow && s.boxShadow !== 'none');
  });
}

/**
 * Texts the page cuts off: an element with text of its own whose content is wider or taller
 * than its box while its overflow is hidden (or ellipsised), or that runs out of the window.
 */
export async function clippedTexts() {
  return browser.execute(() => {
    const out = [];
    for (const el of document.querySelectorAll('body *')) {
      if (!el.checkVisibility?.() && el.offsetParent === null) continue;
      const own = [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
      if (!own) continue;
      const s = getComputedStyle(el);
      const r0 = el.getBoundingClientRect();
      // Visually hidden text (the screen readers' words, `.sr-only`) is clipped on purpose.
      if (r0.width <= 1 || r0.height <= 1 || (s.clip && s.clip !== 'auto')) continue;
      const hides = s.overflowX !== 'visible' || s.overflowY !== 'visible' || s.textOverflow === 'ellipsis';
      const r = el.getBoundingClientRect();
      const tooWide = el.scrollWidth > el.clientWidth + 1;
      const tooTall = el.scrollHeight > el.clientHeight + 1 && s.overflowY !== 'auto' && s.overflowY !== 'scroll';
      if (el.classList.contains('selectable') || el.closest('code, .selectable, [data-clip-ok]')) continue;
      if ((hides && (tooWide || tooTall)) || r.right > window.innerWidth + 1) {
        out.push(`${el.tagName.toLowerCase()}${el.dataset.testid ? `[${el.dataset.testid}]` : ''} "${el.textContent.trim().slice(0, 60)}"`);
      }
    }
    return out;
  });
}
