// Live conversion over a real-time audio loop: run.sh starts a private PulseAudio daemon with a
// null sink `loop` whose monitor is the default source (pulse-loop.sh), and this spec's app
// reaches it through ALSA's `default` devices (wdio.conf.mjs, app.sh). A sine played into the
// sink is the microphone; the app's output goes back into the same loop. Runs on the tiny
// random-weight parity fixtures with small blocks and pm pitch, so the CPU keeps up.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { byTestId, importVoice, invoke, openPage, requireEnv, screenshot, visibleErrors, waitFor, waitForApp, writeSineWav } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const parity = requireEnv('E2E_PARITY_DIR');
const fixture = (p) => path.join(parity, p);
/** Loading the voice and opening the devices, on a loaded machine. */
const START_TIMEOUT = 120000;

/** The variables that route a process to the loop (pulse-loop.sh env). */
function pulseEnv() {
  const out = spawnSync(path.join(here, '..', 'pulse-loop.sh'), ['env', requireEnv('E2E_PULSE_DIR')], { encoding: 'utf8' });
  assert.equal(out.status, 0, `pulse-loop.sh env failed: ${out.stderr}`);
  return Object.fromEntries(out.stdout.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

/** The first channel of a PCM-16 or float-32 WAV (plain or extensible), and its rate. */
function readWav(file) {
  const b = fs.readFileSync(file);
  let fmt = null;
  let data = null;
  for (let at = 12; at + 8 <= b.length; ) {
    const id = b.toString('latin1', at, at + 4);
    const size = b.readUInt32LE(at + 4);
    if (id === 'fmt ') {
      const tag = b.readUInt16LE(at + 8);
      fmt = { float: (tag === 0xfffe ? b.readUInt16LE(at + 32) : tag) === 3, channels: b.readUInt16LE(at + 10), rate: b.readUInt32LE(at + 12), bits: b.readUInt16LE(at + 22) };
    } else if (id === 'data') data = b.subarray(at + 8, at + 8 + size);
    at += 8 + size + (size & 1);
  }
  assert.ok(fmt && data, `${file}: not a WAV with audio`);
  const step = (fmt.bits / 8) * fmt.channels;
  const samples = new Float32Array(Math.floor(data.length / step));
  for (let i = 0; i < samples.length; i++) samples[i] = fmt.float ? data.readFloatLE(i * step) : data.readInt16LE(i * step) / 32768;
  return { rate: fmt.rate, samples };
}

/** Where in `haystack` the short `needle` fits best, by normalised correlation: first on every
 * fourth sample, then sample by sample around the best coarse lag. */
function bestMatch(needle, haystack) {
  const at = (lag, stride) => {
    let dot = 0;
    let heard = 0;
    let played = 0;
    for (let i = 0; i < needle.length; i += stride) {
      dot += needle[i] * haystack[lag + i];
      heard += needle[i] * needle[i];
      played += haystack[lag + i] * haystack[lag + i];
    }
    return dot / (Math.sqrt(heard * played) || 1);
  };
  // Every lag, on every fourth sample: stepping the lag by four too missed the match whenever
  // the true lag was not a multiple of four, since the voice's output holds much energy near
  // Nyquist, where a lag two samples off decorrelates.
  let best = { lag: 0, correlation: -1 };
  for (let lag = 0; lag + needle.length <= haystack.length; lag++) {
    const c = at(lag, 4);
    if (c > best.correlation) best = { lag, correlation: c };
  }
  const coarse = best.lag;
  best = { lag: coarse, correlation: -1 };
  for (let lag = Math.max(0, coarse - 8); lag <= Math.min(haystack.length - needle.length, coarse + 8); lag++) {
    const c = at(lag, 1);
    if (c > best.correlation) best = { lag, correlation: c };
  }
  return best;
}

/** A model of the fixtures already in the library (the convert spec imports them), else imported now. */
async function fixtureModel(weights, index, matches) {
  const found = (await invoke('list_models')).find(matches);
  return found ?? (await importVoice({ source: fixture(weights), index: index && fixture(index) }))[0];
}

async function status() {
  return invoke('live_status');
}

const errors = async () => `state ${JSON.stringify(await $(byTestId('live-state')).getAttribute('data-state'))}, errors ${JSON.stringify(await visibleErrors())}, status ${JSON.stringify((await status())?.stats ?? null)}`;

describe('live', () => {
  let voiceA;
  let voiceB;
  let feeder;
  let beforeIds;

  before(async () => {
    await waitForApp();
    voiceA = await fixtureModel('synth_v1_f0_40k/model.pth', 'index_v1/added_IVF51_Flat_nprobe_1_tiny_v1.index', (m) => m.sample_rate === 40000 && m.f0);
    voiceB = await fixtureModel('synth_v1_nono_32k/model.pth', null, (m) => m.sample_rate === 32000 && m.f0 === false);
    beforeIds = new Set((await invoke('list_takes', { voiceId: null })).map((t) => t.id));
    await openPage('live', byTestId('live-start'));
  });

  after(async () => {
    feeder?.kill();
    // Never leave a stream running for the next spec's app.
    await invoke('stop_live').catch(() => {});
  });

  it('lists the loop devices with the defaults marked', async () => {
    const devices = await invoke('list_live_devices');
    assert.ok(devices.inputs.some((d) => d.is_default), `no default input: ${JSON.stringify(devices.inputs)}`);
    assert.ok(devices.outputs.some((d) => d.is_default), `no default output: ${JSON.stringify(devices.outputs)}`);
    for (const id of ['live-input', 'live-output']) {
      const options = await $(byTestId(id)).$$('option').map((o) => o.getText());
      assert.ok(options.some((o) => o.endsWith('(default)')), `${id} marks no default: ${JSON.stringify(options)}`);
    }
  });

  it('runs the fixture voice live: the meters move and per-block times show', async () => {
    // The microphone: two minutes of a 220 Hz sine at amplitude 0.5 played into the loop.
    const source = writeSineWav(path.join(requireEnv('E2E_TMP'), 'live-source.wav'), { seconds: 120, freq: 220, amplitude: 0.5, rate: 48000 });
    const log = fs.openSync(path.join(requireEnv('E2E_LOG_DIR'), 'live-paplay.log'), 'a');
    feeder = spawn('paplay', ['-d', 'loop', source], { env: { ...process.env, ...pulseEnv() }, stdio: ['ignore', log, log] });
    await $(byTestId('live-voice-a')).selectByAttribute('value', String(voiceA.id));
    await $(byTestId('live-voice-b')).selectByAttribute('value', String(voiceB.id));
    await $(byTestId('live-f0-method')).selectByAttribute('value', 'pm');
    for (const [id, value] of [['live-block', '100'], ['live-context', '500']]) {
      const field = await $(byTestId(id));
      await field.setValue(value);
      await browser.execute((el) => el.dispatchEvent(new Event('change', { bubbles: true })), field);
    }
    await $(byTestId('live-record')).click();
    await $(byTestId('live-start')).click();
    await waitFor(async () => (await $(byTestId('live-state')).getAttribute('data-state')) === 'running', {
      timeout: START_TIMEOUT,
      message: async () => `the stream did not run: ${await errors()}`,
    });
    const running = await status();
    assert.equal(running.voice.model_id, voiceA.id);
    assert.equal(running.params.block_ms, 100);
    assert.equal(running.params.context_ms, 500);
    assert.equal(running.params.f0_method, 'pm');

    // The input meter follows the sine (-6 dBFS, plus what comes back from the output).
    await waitFor(async () => Number(await $(byTestId('live-input-meter')).getAttribute('data-peak-db')) > -20, {
      timeout: 30000,
      message: async () => `the input meter did not move: ${await errors()}`,
    });
    await waitFor(async () => Number(await $(byTestId('live-output-meter')).getAttribute('data-peak-db')) > -80, {
      timeout: 30000,
      message: async () => `the output meter did not move: ${await errors()}`,
    });
    await waitFor(async () => Number(await $(byTestId('live-block-ms')).getAttribute('data-blocks')) >= 5, {
      timeout: 30000,
      message: async () => `no per-block times: ${await errors()}`,
    });
    assert.match(await $(byTestId('live-block-ms')).getText(), /Block: \d+\.\d of 100 ms/);
    assert.ok(Number(await $(byTestId('live-block-chart')).getAttribute('data-points')) >= 2, 'the per-block chart is empty');
    assert.match(await $(byTestId('live-estimated-latency')).getText(), /Latency \(estimated\): \d+\.\d ms/);
    await screenshot('e2e-live.png');
  });

  it('switches between voice A and B in one click while running', async () => {
    assert.equal(await $(byTestId('live-ab-side')).getAttribute('data-side'), 'A');
    await $(byTestId('live-ab-switch')).click();
    await waitFor(async () => (await $(byTestId('live-ab-side')).getAttribute('data-side')) === 'B', {
      timeout: 60000,
      message: async () => `the stream did not switch to B: ${await errors()}`,
    });
    assert.equal((await status()).voice.model_id, voiceB.id);
    const blocks = Number(await $(byTestId('live-block-ms')).getAttribute('data-blocks'));
    await waitFor(async () => Number(await $(byTestId('live-block-ms')).getAttribute('data-blocks')) > blocks + 2, {
      timeout: 30000,
      message: async () => `voice B processes no blocks: ${await errors()}`,
    });
    await $(byTestId('live-ab-switch')).click();
    await waitFor(async () => (await $(byTestId('live-ab-side')).getAttribute('data-side')) === 'A', {
      timeout: 60000,
      message: async () => `the stream did not switch back to A: ${await errors()}`,
    });
  });

  it('stops, and the recorded session is two linked takes in the library', async () => {
    assert.ok(await $(byTestId('live-measure')).isEnabled() === false, 'Measure is offered while the stream runs');
    await $(byTestId('live-stop')).click();
    const note = await $(byTestId('live-recorded'));
    await note.waitForDisplayed({ timeout: 60000 });
    await waitFor(async () => (await $(byTestId('live-state')).getAttribute('data-state')) === 'stopped', {
      timeout: 5000,
      message: 'the page did not return to stopped',
    });
    assert.equal(await status(), null, 'a stream is still running after stop');
    assert.deepEqual(await visibleErrors(), [], 'the live session reported errors');

    const inputId = Number(await note.getAttribute('data-input-take'));
    const outputId = Number(await note.getAttribute('data-output-take'));
    const takes = (await invoke('list_takes', { voiceId: null })).filter((t) => !beforeIds.has(t.id));
    const input = takes.find((t) => t.id === inputId);
    const output = takes.find((t) => t.id === outputId);
    assert.ok(input && output, `the recorded takes are not in the library: ${JSON.stringify(takes.map((t) => [t.id, t.name]))}`);
    assert.ok(input.duration_secs > 1, `the input take lasts ${input.duration_secs} s`);
    assert.ok(output.duration_secs > 1, `the output take lasts ${output.duration_secs} s`);
    assert.ok(input.peak_dbfs > -20, `the input take peaks at ${input.peak_dbfs} dBFS: the sine is not in it`);
    const derived = await invoke('list_derived_takes', { sourceTakeId: inputId });
    const link = derived.find((d) => d.take.id === outputId)?.link;
    assert.ok(link, `the output take is not linked to the input: ${JSON.stringify(derived)}`);
    // How the stream ran is kept with it.
    const numbers = link.params.session;
    assert.ok(numbers.blocks >= 5 && numbers.budget_ms === 100, `session numbers: ${JSON.stringify(numbers)}`);
    assert.ok(numbers.max_block_ms >= numbers.mean_block_ms && numbers.mean_block_ms > 0, JSON.stringify(numbers));
    assert.ok(Number.isInteger(numbers.output_underruns) && numbers.estimated_latency_ms > 200, JSON.stringify(numbers));

    // The note leads to the Library, which lists the input with the output folded under it.
    await $(byTestId('live-open-library')).click();
    const listed = async (take) =>
      waitFor(async () => (await $$(`[data-take-id="${take.id}"]`).length) > 0, {
        timeout: 15000,
        message: `the Library does not list "${take.name}"`,
      });
    await listed(input);
    const group = await $(`[data-testid="derived-group"][data-source="${input.name}"]`);
    await group.$(byTestId('derived-group-toggle')).click();
    await listed(output);
  });

  it('finds the best settings: a live_tune job whose pick the block field takes', async () => {
    await openPage('live', byTestId('live-start'));
    await $(byTestId('live-tune')).click();
    const said = await $(byTestId('live-tuned'));
    await said.waitForDisplayed({ timeout: START_TIMEOUT, timeoutMsg: `no tuning result: ${await errors()}` });
    const picked = Number(await said.getAttribute('data-block-ms'));
    assert.ok(picked >= 40, `no block picked: ${await said.getText()}`);
    assert.equal(Number(await $(byTestId('live-block')).getValue()), picked, 'the block field did not take the pick');
    const job = (await invoke('list_jobs')).find((j) => j.kind === 'live_tune');
    assert.equal(job?.state, 'succeeded', `the live_tune job: ${JSON.stringify(job)}`);
  });

  it('plays the voice into the virtual microphone, which other programs record, and removes it at stop', async () => {
    const env = { ...process.env, ...pulseEnv() };
    const sources = () => spawnSync('pactl', ['list', 'short', 'sources'], { env, encoding: 'utf8' }).stdout;
    feeder?.kill();
    const sine = path.join(requireEnv('E2E_TMP'), 'live-source.wav');
    feeder = spawn('paplay', ['-d', 'loop', sine], { env, stdio: 'ignore' });
    await openPage('live', byTestId('live-start'));
    // Recorded: the session's output take is what it played into the microphone.
    if (!(await $(byTestId('live-record')).isSelected())) await $(byTestId('live-record')).click();
    await $(byTestId('live-virtual-mic')).click();
    await $(byTestId('live-start')).click();
    const note = await $(byTestId('live-virtual-mic-on'));
    await note.waitForDisplayed({ timeout: START_TIMEOUT, timeoutMsg: `no virtual microphone: ${await errors()}` });
    const source = await note.getAttribute('data-source');
    assert.ok(sources().includes(source), `${source} is not a source of the sound server: ${sources()}`);

    // Another program records half a second from it: the voice, not silence.
    await waitFor(async () => Number(await $(byTestId('live-output-meter')).getAttribute('data-peak-db')) > -80, {
      timeout: 30000,
      message: async () => `the output meter did not move: ${await errors()}`,
    });
    const recorded = spawnSync('sh', ['-c', `pacat --record --raw --format=float32le --rate=48000 --channels=1 --latency-msec=20 -d '${source}' | head -c 192000`], { env, timeout: 20000 });
    const samples = new Float32Array(recorded.stdout.buffer, recorded.stdout.byteOffset, Math.floor(recorded.stdout.length / 4));
    const rms = Math.sqrt(samples.reduce((sum, x) => sum + x * x, 0) / samples.length);
    assert.ok(samples.length === 48000 && rms > 1e-3, `recorded ${samples.length} samples at rms ${rms} from ${source}`);

    await $(byTestId('live-stop')).click();
    await waitFor(async () => (await $(byTestId('live-state')).getAttribute('data-state')) === 'stopped', {
      timeout: 60000,
      message: async () => `the stream did not stop: ${await errors()}`,
    });
    assert.ok(!sources().includes(source), `the microphone is left after stop: ${sources()}`);

    // What the other program heard is the converted voice the session played: somewhere in the
    // session's output take, sample for sample.
    const outputId = Number(await $(byTestId('live-recorded')).getAttribute('data-output-take'));
    const take = (await invoke('list_takes', { voiceId: null })).find((t) => t.id === outputId);
    const stored = path.join(requireEnv('E2E_DATA_DIR'), 'store', 'objects', take.sha256.slice(0, 2), `${take.sha256}.${take.format}`);
    const { rate, samples: played } = readWav(stored);
    assert.equal(rate, 48000, `the output take is at ${rate} Hz`);
    const { lag, correlation } = bestMatch(samples.subarray(9600, 14400), played);
    assert.ok(correlation > 0.95, `the microphone's audio matches the session's output at best ${correlation.toFixed(3)} (lag ${lag})`);
  });
});
