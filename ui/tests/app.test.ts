import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { emit } from '@tauri-apps/api/event';
import App from '../src/App.svelte';
import { app } from '../src/lib/stores.svelte';
import { studio } from '../src/lib/studio.svelte';
import { AbSession } from '../src/lib/abSession.svelte';
import { CATALOGUES, i18n } from '../src/lib/i18n.svelte';
import {
  SHELL,
  FakeAudioContext,
  doctorReport,
  essentialAssets,
  installFakeAudio,
  makeJob,
  makeModel,
  makeTake,
  makeVoice,
  mockBackend,
  voiceImport,
} from './helpers';


describe('App shell', () => {
  it('shows a rejected command message in the error banner', async () => {
    mockBackend({
      ...SHELL,
      list_takes: () => {
        throw { kind: 'io', message: 'library database is locked' };
      },
    });
    render(App);
    const banner = await screen.findByTestId('error-banner');
    expect(banner).toHaveTextContent('library database is locked');
    expect(banner).not.toHaveTextContent('[object Object]');
    // The error's kind, explained beside the message.
    expect(within(banner).getByTestId('error-message')).toHaveTextContent('Could not load the library: library database is locked');
    expect(within(banner).getByTestId('error-hint')).toHaveTextContent(
      'File error — A file could not be read or written: check the folder exists and is writable, then Retry.',
    );
    // Dismissable.
    await fireEvent.click(within(banner).getByRole('button', { name: 'Dismiss' }));
    await waitFor(() => expect(screen.queryByTestId('error-banner')).toBeNull());
  });

  it('explains a rejected command in the UI language and keeps the message as the backend wrote it', async () => {
    i18n.choose('de');
    mockBackend({
      ...SHELL,
      list_takes: () => {
        throw { kind: 'disk_full', message: 'No space left on device (os error 28)' };
      },
    });
    render(App);
    const banner = await screen.findByTestId('error-banner');
    expect(within(banner).getByTestId('error-message')).toHaveTextContent(
      `${CATALOGUES.de['app.library_load_failed']}: No space left on device (os error 28)`,
    );
    const hint = within(banner).getByTestId('error-hint');
    expect(hint).toHaveAttribute('data-kind', 'disk_full');
    expect(hint).toHaveTextContent(`${CATALOGUES.de['errors.disk_full_title']} — ${CATALOGUES.de['errors.disk_full_hint']}`);
    expect(within(banner).getByRole('button', { name: CATALOGUES.de['app.dismiss'] })).toBeInTheDocument();
    // The sidebar and the status bar are German too; the pages keep their ids.
    expect(screen.getByTestId('nav-settings')).toHaveTextContent('Einstellungen');
    expect(screen.getByRole('navigation')).toHaveAccessibleName(CATALOGUES.de['app.nav_main']);
    expect(screen.getByTestId('playback-state')).toHaveTextContent(CATALOGUES.de['app.status_stopped']);
    await waitFor(() => expect(screen.getByTestId('library-counts')).toHaveTextContent('0 Takes'));
  });

  it('navigates between pages with the sidebar', async () => {
    mockBackend({
      ...SHELL,
      get_doctor_report: () => doctorReport(essentialAssets(true, true)),
      list_input_devices: () => [],
      list_conversions: () => [],
      list_listening_tests: () => [],
      get_resource_snapshot: () => ({ cpu_percent: 5, ram_used_bytes: 0, ram_total_bytes: 1, gpus: [] }),
      get_model_cache: () => ({ budget_bytes: 1, used_bytes: 0, hits: 0, misses: 0, evictions: 0, models: [] }),
    });
    render(App);
    expect(await screen.findByTestId('library-empty')).toBeInTheDocument();
    const page = screen.getByTestId('page');
    page.scrollTop = 500;
    await fireEvent.click(screen.getByTestId('nav-jobs'));
    expect(await screen.findByTestId('jobs-empty')).toBeInTheDocument();
    // Each page opens at its top, not where the Library was scrolled to.
    expect(page.scrollTop).toBe(0);
    await fireEvent.click(screen.getByTestId('nav-record'));
    expect(await screen.findByTestId('record-start')).toBeInTheDocument();
    await fireEvent.click(screen.getByTestId('nav-models'));
    expect(await screen.findByTestId('model-files')).toBeInTheDocument();
    await fireEvent.click(screen.getByTestId('nav-compare'));
    expect(await screen.findByTestId('compare-empty')).toBeInTheDocument();
    await fireEvent.click(screen.getByTestId('nav-convert'));
    expect(await screen.findByTestId('convert-params')).toBeInTheDocument();
    await fireEvent.click(screen.getByTestId('nav-record'));
    expect(screen.getByTestId('nav-record')).toHaveAttribute('aria-current', 'page');
  });

  it('imports dropped files into the current voice filter', async () => {
    const be = mockBackend(
      {
        ...SHELL,
        import_files: () => 42,
      },
      { windows: true },
    );
    render(App);
    await screen.findByTestId('library-empty');
    // The drag-drop listeners register asynchronously after mount.
    await waitFor(async () => {
      await emit('tauri://drag-enter', { paths: ['/in/a.wav'], position: { x: 1, y: 1 } });
      expect(screen.getByTestId('drop-overlay')).toBeInTheDocument();
    });
    expect(screen.getByTestId('drop-overlay')).toHaveTextContent('Drop audio files to import');
    await emit('tauri://drag-leave', null);
    await waitFor(() => expect(screen.queryByTestId('drop-overlay')).toBeNull());

    await emit('tauri://drag-enter', { paths: ['/in/a.wav'], position: { x: 1, y: 1 } });
    await emit('tauri://drag-drop', { paths: ['/in/a.wav', '/in/b.flac'], position: { x: 5, y: 5 } });
    await waitFor(() => expect(be.argsOf('import_files')).toEqual([{ paths: ['/in/a.wav', '/in/b.flac'], voiceId: null }]));
    expect(screen.queryByTestId('drop-overlay')).toBeNull();
    expect(await screen.findByText('Importing 2 files…')).toBeInTheDocument();

    // With a voice selected, dropped files go into that voice.
    app.voices = [makeVoice({ id: 3, name: 'Alto' })];
    app.voiceFilter = 3;
    await emit('tauri://drag-enter', { paths: ['/in/c.wav'], position: { x: 1, y: 1 } });
    expect(await screen.findByTestId('drop-overlay')).toHaveTextContent('Alto');
    await emit('tauri://drag-drop', { paths: ['/in/c.wav'], position: { x: 5, y: 5 } });
    await waitFor(() => expect(be.argsOf('import_files').at(-1)).toEqual({ paths: ['/in/c.wav'], voiceId: 3 }));
    expect(await screen.findByText('Importing 1 file into Alto…')).toBeInTheDocument();
  });

  it('routes a drop by extension: a .pth with its .index and a folder are voice imports, audio an import', async () => {
    const be = mockBackend(
      {
        ...SHELL,
        import_files: () => 43,
        import_voice: () => 44 + be.argsOf('import_voice').length,
      },
      { windows: true },
    );
    render(App);
    await screen.findByTestId('library-empty');
    await waitFor(async () => {
      await emit('tauri://drag-enter', { paths: ['/m/ada.pth'], position: { x: 1, y: 1 } });
      expect(screen.getByTestId('drop-overlay')).toBeInTheDocument();
    });
    await emit('tauri://drag-drop', { paths: ['/m/ada.pth', '/m/added_ada_v1.index', '/in/a.wav', '/dl/Tenor'], position: { x: 5, y: 5 } });
    await waitFor(() =>
      expect(be.argsOf('import_voice')).toEqual([voiceImport('/m/ada.pth', '/m/added_ada_v1.index'), voiceImport('/dl/Tenor')]),
    );
    await waitFor(() => expect(be.argsOf('import_files')).toEqual([{ paths: ['/in/a.wav'], voiceId: null }]));
    expect(await screen.findByText('Importing voices from ada.pth…')).toBeInTheDocument();
    expect(screen.getByText('Importing voices from Tenor…')).toBeInTheDocument();

    // On the Convert page dropped audio becomes inputs instead of takes.
    await fireEvent.click(screen.getByTestId('nav-convert'));
    await emit('tauri://drag-enter', { paths: ['/in/b.wav'], position: { x: 1, y: 1 } });
    expect(await screen.findByTestId('drop-overlay')).toHaveTextContent('Drop audio files to convert');
    await emit('tauri://drag-drop', { paths: ['/in/b.wav'], position: { x: 5, y: 5 } });
    await waitFor(() => expect(screen.getAllByTestId('convert-input').map((i) => i.dataset.label)).toEqual(['b.wav']));
    expect(be.argsOf('import_files')).toHaveLength(1);
  });

  it('imports a dropped .zip and a link pasted on the Models page as voice_import jobs, and lists the models when one succeeds', async () => {
    let models = [] as ReturnType<typeof makeModel>[];
    const be = mockBackend(
      {
        ...SHELL,
        list_models: () => models,
        get_doctor_report: () => doctorReport(essentialAssets(true, true)),
        import_voice: () => (be.argsOf('import_voice').length === 1 ? 77 : 78),
      },
      { windows: true },
    );
    render(App);
    await screen.findByTestId('library-empty');
    await waitFor(async () => {
      await emit('tauri://drag-enter', { paths: ['/dl/Alto voices.zip'], position: { x: 1, y: 1 } });
      expect(screen.getByTestId('drop-overlay')).toBeInTheDocument();
    });
    await emit('tauri://drag-drop', { paths: ['/dl/Alto voices.zip'], position: { x: 5, y: 5 } });
    await waitFor(() => expect(be.argsOf('import_voice')).toEqual([voiceImport('/dl/Alto voices.zip')]));
    expect(await screen.findByText('Importing voices from Alto voices.zip…')).toBeInTheDocument();

    // A link pasted elsewhere than the Models page, or into a text field, is left alone.
    const paste = (target: EventTarget, text: string) => {
      const event = new Event('paste', { bubbles: true }) as ClipboardEvent;
      Object.defineProperty(event, 'clipboardData', { value: { getData: () => text } });
      target.dispatchEvent(event);
    };
    const link = 'https://huggingface.co/someone/voices/blob/main/alto.zip';
    paste(document.body, link);
    await fireEvent.click(screen.getByTestId('nav-models'));
    paste(document.body, 'not a link');
    const field = document.createElement('input');
    document.body.appendChild(field);
    paste(field, link);
    field.remove();
    expect(be.argsOf('import_voice')).toHaveLength(1);
    paste(document.body, `  ${link}\n`);
    await waitFor(() => expect(be.argsOf('import_voice')).toEqual([voiceImport('/dl/Alto voices.zip'), voiceImport(link)]));

    models = [makeModel({ id: 3, name: 'Alto' })];
    const channel = be.argsOf('subscribe_notifications')[0].onEvent;
    const listed = be.argsOf('list_models').length;
    channel.onmessage({ type: 'job', job: makeJob({ id: 77, kind: 'voice_import', state: 'succeeded', message: '1 voice model(s) imported' }) });
    await waitFor(() => expect(be.argsOf('list_models').length).toBeGreaterThan(listed));
    expect(await screen.findByText('Voice import finished: 1 voice model(s) imported')).toBeInTheDocument();
    // The notice of the finished import goes; the other import's stays until it ends too.
    expect(screen.queryByText('Importing voices from Alto voices.zip…')).toBeNull();
    expect(screen.getByText('Importing voices from alto.zip…')).toBeInTheDocument();
  });

  it('ends an interrupted voice import like any other end: the notice goes and the job is no longer followed', async () => {
    const be = mockBackend({ import_voice: () => 77, list_models: () => [] });
    await studio.importVoice('/dl/alto.zip');
    expect(app.notices.map((n) => n.text)).toEqual(['Importing voices from alto.zip…']);
    app.handleEvent({ type: 'job', job: makeJob({ id: 77, kind: 'voice_import', state: 'interrupted' }) });
    expect(app.notices.map((n) => n.text)).toEqual(['Voice import interrupted']);
    // Retried from the Jobs page, the same job succeeding later is no longer this import's.
    app.handleEvent({ type: 'job', job: makeJob({ id: 77, kind: 'voice_import', state: 'succeeded' }) });
    await Promise.resolve();
    expect(be.argsOf('list_models')).toEqual([]);
  });

  it('announces the end of a voice import that ended before the command that queued it answered', async () => {
    mockBackend({
      import_voice: () => {
        app.handleEvent({ type: 'job', job: makeJob({ id: 77, kind: 'voice_import', state: 'failed', error: '/m/x.pth: not an RVC model' }) });
        return 77;
      },
    });
    await studio.importVoice('/m/x.pth');
    expect(app.notices.map((n) => [n.level, n.text])).toEqual([['error', 'Voice import failed: /m/x.pth: not an RVC model']]);
  });

  it('subscribes once and applies live events', async () => {
    let takes = [makeTake({ id: 1, name: 'First' })];
    const be = mockBackend({
      ...SHELL,
      list_takes: () => takes,
      get_resource_snapshot: () => ({ cpu_percent: 5, ram_used_bytes: 0, ram_total_bytes: 1, gpus: [] }),
      get_model_cache: () => ({ budget_bytes: 1, used_bytes: 0, hits: 0, misses: 0, evictions: 0, models: [] }),
    });
    render(App);
    await screen.findAllByTestId('take-row');
    await waitFor(() => expect(be.argsOf('subscribe_notifications')).toHaveLength(1));
    const channel = be.argsOf('subscribe_notifications')[0].onEvent;

    channel.onmessage({ type: 'job', job: makeJob({ id: 5, state: 'running', progress: 0.3 }) });
    await fireEvent.click(screen.getByTestId('nav-jobs'));
    const row = await screen.findByTestId('job-row');
    expect(row).toHaveAttribute('data-job-state', 'running');

    takes = [...takes, makeTake({ id: 2, name: 'Second' })];
    channel.onmessage({ type: 'library_changed' });
    await fireEvent.click(screen.getByTestId('nav-library'));
    await waitFor(() => expect(screen.getAllByTestId('take-row')).toHaveLength(2));
  });

  it('plays a take with Web Audio and reports playback state', async () => {
    installFakeAudio();
    const be = mockBackend({
      ...SHELL,
      list_takes: () => [makeTake({ id: 9, name: 'Hum' })],
      get_take_audio: () => new Uint8Array([82, 73, 70, 70]),
    });
    render(App);
    const state = screen.getByTestId('playback-state');
    expect(state).toHaveTextContent('stopped');
    const row = await screen.findByTestId('take-row');
    await fireEvent.click(within(row).getByTestId('take-play'));
    await waitFor(() => expect(state).toHaveTextContent('playing'));
    expect(be.argsOf('get_take_audio')).toEqual([{ id: 9 }]);
    const src = FakeAudioContext.last!.sources.at(-1);
    expect(src.started).toBe(true);
    // The source reaching its end returns the state to "stopped".
    src.onended();
    await waitFor(() => expect(state).toHaveTextContent('stopped'));

    // Stop button path.
    await fireEvent.click(within(row).getByTestId('take-play'));
    await waitFor(() => expect(state).toHaveTextContent('playing'));
    await fireEvent.click(within(row).getByTestId('take-play'));
    await waitFor(() => expect(state).toHaveTextContent('stopped'));
  });

  it('counts the voice models in the status bar', async () => {
    mockBackend({
      ...SHELL,
      list_takes: () => [makeTake({ id: 9, name: 'Hum' })],
      list_models: () => [makeModel({ id: 1 }), makeModel({ id: 2 }), makeModel({ id: 3 })],
    });
    render(App);
    const counts = screen.getByTestId('library-counts');
    await waitFor(() => expect(counts).toHaveTextContent('1 take · 3 voice models'));
    studio.removeModel(2);
    studio.removeModel(3);
    await waitFor(() => expect(counts).toHaveTextContent('1 take · 1 voice model'));
  });

  it('shows an A/B comparison playing in the status bar, and pauses it from there', async () => {
    installFakeAudio();
    mockBackend(SHELL);
    render(App);
    const state = screen.getByTestId('playback-state');
    const session = new AbSession(() => [{ key: 'a', label: 'A', load: async () => new Uint8Array([40]).buffer }], () => {});
    await session.toggle();
    await waitFor(() => expect(state).toHaveTextContent('playing'));
    await fireEvent.click(screen.getByRole('button', { name: 'Pause' }));
    expect(session.playing).toBe(false);
    await waitFor(() => expect(state).toHaveTextContent('stopped'));
    session.dispose();
  });

  it('reports playback failures in the banner', async () => {
    installFakeAudio();
    mockBackend({
      ...SHELL,
      list_takes: () => [makeTake({ id: 9, name: 'Hum' })],
      get_take_audio: () => {
        throw { kind: 'not_found', message: 'audio file missing on disk' };
      },
    });
    render(App);
    const row = await screen.findByTestId('take-row');
    await fireEvent.click(within(row).getByTestId('take-play'));
    expect(await screen.findByTestId('error-banner')).toHaveTextContent('audio file missing on disk');
    expect(screen.getByTestId('playback-state')).toHaveTextContent('stopped');
  });
});
