import { describe, expect, it } from 'vitest';
import { Channel } from '@tauri-apps/api/core';
import { clearMocks } from '@tauri-apps/api/mocks';
import * as api from '../src/lib/api';
import { mockBackend, makeTake } from './helpers';

describe('voice import', () => {
  it('has one route: nothing in the UI calls import_model', () => {
    const sources = import.meta.glob<string>('../src/**/*.{ts,svelte}', { query: '?raw', import: 'default', eager: true });
    expect(Object.keys(sources).length).toBeGreaterThan(50);
    expect(Object.keys(sources).filter((file) => /import_model|importModel/.test(sources[file]))).toEqual([]);
  });

  it('sends the source and the index in the request of import_voice', async () => {
    const be = mockBackend({ import_voice: () => 9 });
    await expect(api.importVoice('/m/a.pth', '/m/added_a_v2.index')).resolves.toBe(9);
    expect(be.argsOf('import_voice')).toEqual([
      { request: { source: '/m/a.pth', index: '/m/added_a_v2.index', use_index: null, name: null, voice_id: null } },
    ]);
  });
});

describe('api argument mapping', () => {
  it('sends camelCase argument keys to snake_case commands', async () => {
    const take = makeTake({ id: 7, name: 'New' });
    const none = () => null;
    const be = mockBackend({
      rename_take: () => take,
      set_take_voice: () => take,
      set_take_tags: () => take,
      list_takes: () => [],
      delete_take: none,
      import_files: () => 1,
      stop_recording: () => take,
      cancel_job: none,
      retry_job: none,
      list_job_events: () => [],
      get_job_report: () => ({}),
      create_voice: none,
    });
    await expect(api.renameTake(7, 'New')).resolves.toEqual(take);
    await api.setTakeVoice(7, 3);
    await api.setTakeVoice(7, null);
    await api.setTakeTags(7, ['a', 'b']);
    await api.listTakes(null);
    await api.listTakes(4);
    await api.deleteTake(7);
    await api.importFiles(['/x/a.wav', '/x/b.flac'], 2);
    await api.stopRecording(null, null);
    await api.stopRecording('Verse', 5);
    await api.cancelJob(9);
    await api.retryJob(9);
    await api.jobEvents(9);
    await api.jobReport(9);
    await api.createVoice('Tenor');
    expect(be.calls.map((c) => [c.cmd, c.args])).toEqual([
      ['rename_take', { id: 7, name: 'New' }],
      ['set_take_voice', { id: 7, voiceId: 3 }],
      ['set_take_voice', { id: 7, voiceId: null }],
      ['set_take_tags', { id: 7, tags: ['a', 'b'] }],
      ['list_takes', { voiceId: null }],
      ['list_takes', { voiceId: 4 }],
      ['delete_take', { id: 7 }],
      ['import_files', { paths: ['/x/a.wav', '/x/b.flac'], voiceId: 2 }],
      ['stop_recording', { name: null, voiceId: null }],
      ['stop_recording', { name: 'Verse', voiceId: 5 }],
      ['cancel_job', { id: 9 }],
      ['retry_job', { id: 9 }],
      ['list_job_events', { id: 9 }],
      ['get_job_report', { id: 9 }],
      ['create_voice', { name: 'Tenor' }],
    ]);
  });

  it('passes channels for subscribe_notifications and start_recording', async () => {
    const be = mockBackend({ subscribe_notifications: () => null, start_recording: () => null });
    const seen: api.Notification[] = [];
    const ch = await api.subscribe((e) => seen.push(e));
    const { onEvent } = be.argsOf('subscribe_notifications')[0];
    expect(onEvent).toBeInstanceOf(Channel);
    expect(onEvent).toBe(ch);
    // Deliver a message the way the Rust side does (indexed channel message).
    (window as any).__TAURI_INTERNALS__.runCallback(ch.id, { index: 0, message: { type: 'library_changed' } });
    expect(seen).toEqual([{ type: 'library_changed' }]);

    const levels: api.LevelUpdate[] = [];
    await api.startRecording('USB Mic', (l) => levels.push(l));
    const rec = be.argsOf('start_recording')[0];
    expect(rec.device).toBe('USB Mic');
    expect(rec.onLevel).toBeInstanceOf(Channel);
  });

  it('normalises get_take_audio to an ArrayBuffer', async () => {
    mockBackend({ get_take_audio: () => [82, 73, 70, 70] });
    const buf = await api.takeAudio(1);
    expect(buf).toBeInstanceOf(ArrayBuffer);
    expect(Array.from(new Uint8Array(buf))).toEqual([82, 73, 70, 70]);
    clearMocks();
    mockBackend({ get_take_audio: () => new Uint8Array([1, 2, 3]) });
    expect(new Uint8Array(await api.takeAudio(1))).toEqual(new Uint8Array([1, 2, 3]));
  });
});

describe('api errors', () => {
  it('turns {kind, message} rejections into an Error with that message', async () => {
    mockBackend({
      rename_take: () => {
        throw { kind: 'not_found', message: 'take 7 does not exist' };
      },
    });
    const err = await api.renameTake(7, 'x').catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).toBeInstanceOf(api.ApiError);
    expect(err.message).toBe('take 7 does not exist');
    expect(err.kind).toBe('not_found');
    expect(err.command).toBe('rename_take');
    expect(String(err)).not.toContain('[object Object]');
  });

  it('handles plain string and odd rejections', async () => {
    mockBackend({
      list_jobs: () => {
        throw 'command list_jobs not found';
      },
      list_voices: () => {
        throw { code: 3 };
      },
    });
    await expect(api.listJobs()).rejects.toMatchObject({ message: 'command list_jobs not found', kind: 'internal' });
    await expect(api.listVoices()).rejects.toMatchObject({ message: '{"code":3}' });
    expect(api.errorMessage({ kind: 'busy', message: 'Recorder busy' })).toBe('Recorder busy');
    expect(api.errorMessage(new Error('boom'))).toBe('boom');
  });

  it('keeps the kind a rejection reported, and none for a failure of the UI itself', async () => {
    mockBackend({
      delete_take: () => {
        throw { kind: 'disk_full', message: 'No space left on device' };
      },
    });
    expect(api.errorKind(await api.deleteTake(1).catch((e) => e))).toBe('disk_full');
    expect(api.errorKind({ kind: 'busy', message: 'Recorder busy' })).toBe('busy');
    expect(api.errorKind({ kind: 'no_such_kind', message: 'x' })).toBeNull();
    expect(api.errorKind(new Error('decode failed'))).toBeNull();
    expect(api.errorKind('plain text')).toBeNull();
  });

  it('names every job kind with a message key', () => {
    expect(api.JOB_TITLES.voice_import).toBe('app.job_voice_import');
  });

  it('rejects clearly outside the app', async () => {
    clearMocks();
    await expect(api.listVoices()).rejects.toThrow(/Backend unavailable/);
  });
});
