import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import Library from '../src/pages/Library.svelte';
import Convert from '../src/pages/Convert.svelte';
import Models from '../src/pages/Models.svelte';
import { app } from '../src/lib/stores.svelte';
import { studio } from '../src/lib/studio.svelte';
import { doctorReport, makeJob, makeModel, mockBackend, voiceImport } from './helpers';

/** The dialog plugin's command, answered with `picked` (null: cancelled), and an empty library. */
const dialog = (picked: string[] | string | null) => ({
  'plugin:dialog|open': () => picked,
  list_voices: () => [],
  list_takes: () => [],
  list_conversions: () => [],
  list_derived_links: () => [],
});

describe('Browse buttons (the native file dialog)', () => {
  it('imports the audio files picked on the Library page, offering audio first', async () => {
    const be = mockBackend({
      ...dialog(['/home/me/a.wav', '/home/me/b.m4a']),
      import_files: () => 7,
      list_jobs: () => [makeJob({ id: 7 })],
    });
    render(Library);
    await fireEvent.click(screen.getByTestId('library-import-files'));
    await waitFor(() => expect(be.argsOf('import_files')).toHaveLength(1));
    expect(be.argsOf('import_files')[0].paths).toEqual(['/home/me/a.wav', '/home/me/b.m4a']);
    const { options } = be.argsOf('plugin:dialog|open')[0];
    expect(options.multiple).toBe(true);
    expect(options.directory).toBe(false);
    expect(options.filters[0].extensions).toEqual(['wav', 'flac', 'mp3', 'ogg', 'm4a']);
  });

  it('does nothing when the dialog is cancelled', async () => {
    const be = mockBackend({ ...dialog(null) });
    render(Library);
    await fireEvent.click(screen.getByTestId('library-import-files'));
    await waitFor(() => expect(be.argsOf('plugin:dialog|open')).toHaveLength(1));
    await waitFor(() => expect(screen.getByTestId('library-import-files')).toBeEnabled());
    expect(be.argsOf('import_files')).toHaveLength(0);
    expect(app.notices).toHaveLength(0);
  });

  it('says so when the dialog cannot open', async () => {
    mockBackend({
      ...dialog(null),
      'plugin:dialog|open': () => {
        throw 'no display';
      },
    });
    render(Library);
    await fireEvent.click(screen.getByTestId('library-import-files'));
    await waitFor(() => expect(app.notices.map((n) => n.text)).toEqual(['Could not open the file dialog: no display']));
  });

  it('adds picked files to the Convert inputs and picks the output folder as a directory', async () => {
    const be = mockBackend({
      list_models: () => [makeModel({ id: 1, name: 'Ada' })],
      list_conversions: () => [],
      list_assets: () => ({ models_dir: '/data/models', catalog: 'test', assets: [] }),
      'plugin:dialog|open': ({ options }: any) => (options.directory ? '/home/me/out' : ['/home/me/song.flac']),
    });
    render(Convert);
    await fireEvent.click(screen.getByTestId('convert-add-files'));
    await waitFor(() => expect(studio.inputs).toEqual([{ file: '/home/me/song.flac' }]));
    await fireEvent.click(screen.getByTestId('param-out-dir-browse'));
    await waitFor(() => expect(screen.getByTestId('param-out-dir')).toHaveValue('/home/me/out'));
    expect(studio.outDir).toBe('/home/me/out');
    expect(be.argsOf('plugin:dialog|open').map((a) => [a.options.multiple, a.options.directory])).toEqual([
      [true, false],
      [false, true],
    ]);
  });

  it('fills the voice import form from the dialogs: a .zip or a .pth with its index, or a folder, each imported', async () => {
    const picks = ['/home/me/voices.zip', '/home/me/RVC/weights', '/home/me/voice.pth', '/home/me/added_IVF1_Flat_voice_v2.index'];
    const be = mockBackend({
      list_models: () => [],
      list_assets: () => ({ models_dir: '/data/models', catalog: 'test', assets: [] }),
      get_doctor_report: () => doctorReport([]),
      'plugin:dialog|open': () => picks.shift(),
      import_voice: () => 5 + be.argsOf('import_voice').length,
    });
    render(Models);
    const source = screen.getByTestId('model-import-source');
    async function importPicked() {
      await fireEvent.click(screen.getByTestId('model-import-submit'));
      await waitFor(() => expect(source).toHaveValue(''));
    }
    await fireEvent.click(screen.getByTestId('model-import-browse-file'));
    await waitFor(() => expect(source).toHaveValue('/home/me/voices.zip'));
    await importPicked();
    await fireEvent.click(screen.getByTestId('model-import-browse-folder'));
    await waitFor(() => expect(source).toHaveValue('/home/me/RVC/weights'));
    await importPicked();
    await fireEvent.click(screen.getByTestId('model-import-browse-file'));
    await waitFor(() => expect(source).toHaveValue('/home/me/voice.pth'));
    await fireEvent.click(screen.getByTestId('model-import-browse-index'));
    await waitFor(() =>
      expect(screen.getByTestId('model-import-index')).toHaveValue('/home/me/added_IVF1_Flat_voice_v2.index'),
    );
    await importPicked();
    expect(be.argsOf('import_voice')).toEqual([
      voiceImport('/home/me/voices.zip'),
      voiceImport('/home/me/RVC/weights'),
      voiceImport('/home/me/voice.pth', '/home/me/added_IVF1_Flat_voice_v2.index'),
    ]);
    const dialogs = be.argsOf('plugin:dialog|open').map(({ options }) => [options.directory, options.filters?.[0].extensions]);
    expect(dialogs).toEqual([
      [false, ['pth', 'zip']],
      [true, undefined],
      [false, ['pth', 'zip']],
      [false, ['index']],
    ]);
  });
});
