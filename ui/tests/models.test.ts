import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import Models from '../src/pages/Models.svelte';
import { app } from '../src/lib/stores.svelte';
import { assetList, doctorReport, essentialAssets, makeJob, makeModel, mockBackend, voiceImport } from './helpers';

const ada = makeModel({ id: 1, name: 'Ada', version: 'v2', sample_rate: 40000, f0: true, index_sha256: null });
const bo = makeModel({
  id: 2,
  name: 'Bo',
  version: 'v1',
  sample_rate: 32000,
  f0: false,
  index_sha256: '12'.repeat(32),
  metadata: {
    speakers: 3,
    feature_dim: 256,
    vocoder: 'RefineGAN',
    file: { epoch: 40, author: 'Kim', vocoder: 'RefineGAN', embedder_model: 'contentvec' },
  },
});

function backend(extra: Record<string, (a: any) => unknown> = {}) {
  return mockBackend({
    list_models: () => [ada, bo],
    list_assets: () => assetList(essentialAssets(true, false)),
    get_doctor_report: () => doctorReport(essentialAssets(true, false)),
    ...extra,
  });
}

const row = (name: string) => screen.getAllByTestId('model-row').find((r) => r.dataset.modelName === name)!;

describe('Models page', () => {
  it('lists voice models with what their files say, and the catalogue assets with the folder', async () => {
    backend();
    render(Models);
    await waitFor(() => expect(screen.getAllByTestId('model-row')).toHaveLength(2));
    expect(row('Ada')).toHaveTextContent('v2');
    expect(row('Ada')).toHaveTextContent('40 kHz');
    expect(within(row('Ada')).getByTestId('model-pitch')).toHaveTextContent('pitch');
    expect(within(row('Ada')).getByTestId('model-index')).toHaveTextContent('no index');
    expect(within(row('Bo')).getByTestId('model-pitch')).toHaveTextContent('no pitch');
    expect(within(row('Bo')).getByTestId('model-index')).toHaveTextContent(/^\s*index\s*$/);
    expect(row('Bo')).toHaveTextContent('speakers 3');
    expect(row('Bo')).toHaveTextContent('256-d');
    expect(row('Bo')).toHaveTextContent('author Kim');
    expect(row('Bo')).toHaveTextContent('epoch 40');
    expect(row('Bo')).toHaveTextContent('vocoder RefineGAN');
    expect(row('Bo')).toHaveTextContent('embedder contentvec');
    expect(row('Ada')).not.toHaveTextContent('vocoder');

    expect(await screen.findByTestId('models-dir')).toHaveTextContent('/data/models');
    const files = screen.getAllByTestId('asset-row');
    expect(files.map((f) => [f.dataset.name, f.dataset.state])).toEqual([
      ['hubert', 'verified'],
      ['rmvpe', 'missing'],
    ]);
    expect(files[1]).toHaveTextContent('rmvpe.pt');
    expect(files[1]).toHaveTextContent('convert (rmvpe f0)');
  });

  it("asks for a custom embedder's folder, sends the one picked and shows it", async () => {
    const own = makeModel({ id: 4, name: 'Own', metadata: { embedder: 'custom', embedder_files: [] } });
    const be = backend({
      list_models: () => [ada, own],
      'plugin:dialog|open': () => '/home/me/my-hubert',
      choose_model_embedder: ({ id, folder }: { id: number; folder: string }) =>
        makeModel({ id, name: 'Own', metadata: { embedder: 'custom', custom_embedder: folder } }),
    });
    render(Models);
    await waitFor(() => expect(screen.getAllByTestId('model-row')).toHaveLength(2));
    expect(within(row('Ada')).queryByTestId('model-custom-embedder')).toBeNull();
    const note = within(row('Own')).getByTestId('model-custom-embedder');
    expect(note).toHaveTextContent('Trained on a custom embedder: choose its folder');
    await fireEvent.click(within(note).getByTestId('model-embedder-browse'));
    await waitFor(() => expect(be.argsOf('choose_model_embedder')).toEqual([{ id: 4, folder: '/home/me/my-hubert' }]));
    await waitFor(() => expect(within(row('Own')).getByTestId('model-custom-embedder')).toHaveTextContent('Custom embedder: /home/me/my-hubert'));
  });

  it('imports what the Voice field is given (a link, a .zip, a .pth with its index) as voice_import jobs, and lists the models when one succeeds', async () => {
    let models = [ada, bo];
    const be = backend({
      list_models: () => models,
      import_voice: () => 70 + be.argsOf('import_voice').length,
    });
    render(Models);
    await waitFor(() => expect(screen.getAllByTestId('model-row')).toHaveLength(2));
    const source = screen.getByTestId('model-import-source');
    const index = screen.getByTestId('model-import-index');
    expect(source).toHaveAttribute('placeholder', '.pth, .zip, folder or https://… link');
    async function importTyped(voice: string, indexPath = '') {
      await fireEvent.input(source, { target: { value: voice } });
      await fireEvent.input(index, { target: { value: indexPath } });
      await fireEvent.click(screen.getByTestId('model-import-submit'));
      await waitFor(() => expect(source).toHaveValue(''));
    }
    const link = 'https://huggingface.co/someone/voices/blob/main/alto.zip';
    await importTyped(`  ${link}  `);
    await importTyped('/dl/voices.zip');
    await importTyped('/m/cy.pth', ' /m/added_IVF1_Flat_cy_v2.index ');
    expect(index).toHaveValue('');
    expect(be.argsOf('import_voice')).toEqual([
      voiceImport(link),
      voiceImport('/dl/voices.zip'),
      voiceImport('/m/cy.pth', '/m/added_IVF1_Flat_cy_v2.index'),
    ]);
    expect(app.notices.map((n) => n.text)).toEqual([
      'Importing voices from alto.zip…',
      'Importing voices from voices.zip…',
      'Importing voices from cy.pth…',
    ]);

    app.handleEvent({ type: 'job', job: makeJob({ id: 73, kind: 'voice_import', state: 'running' }) });
    expect(await screen.findByTestId('model-importing')).toHaveTextContent('importing…');
    models = [...models, makeModel({ id: 3, name: 'Cy' })];
    app.handleEvent({
      type: 'job',
      job: makeJob({ id: 73, kind: 'voice_import', state: 'succeeded', message: '1 voice model(s) imported from /m/cy.pth' }),
    });
    await waitFor(() => expect(screen.getAllByTestId('model-row')).toHaveLength(3));
    expect(screen.queryByTestId('model-importing')).toBeNull();
    // The backend's pairing message is the failed import's notice.
    const ambiguous = '/dl/voices.zip: 2 indexes fit the voice alto.pth: old/added_a.index (768-d), new/added_b.index (768-d)';
    app.handleEvent({ type: 'job', job: makeJob({ id: 72, kind: 'voice_import', state: 'failed', error: ambiguous }) });
    // Each ended import's notice is replaced by how it ended.
    expect(app.notices.map((n) => n.text)).toEqual([
      'Importing voices from alto.zip…',
      'Voice import finished: 1 voice model(s) imported from /m/cy.pth',
      `Voice import failed: ${ambiguous}`,
    ]);
  });

  it("warns, when an import succeeds, of a voice the models folder's HuBERT cannot feed", async () => {
    const be = backend({ import_voice: () => 90 });
    render(Models);
    await fireEvent.input(screen.getByTestId('model-import-source'), { target: { value: '/m/wide.pth' } });
    await fireEvent.click(screen.getByTestId('model-import-submit'));
    await waitFor(() => expect(be.argsOf('import_voice')).toHaveLength(1));
    const warning =
      "wide takes 768-d content features but /data/models/hubert_base.pt gives 64-d ones: get RVC's HuBERT (hubert_base.pt, on the Models page or `timbre assets download hubert`) before converting with it";
    app.handleEvent({
      type: 'job',
      job: makeJob({
        id: 90,
        kind: 'voice_import',
        state: 'succeeded',
        message: `1 voice model(s) imported from /m/wide.pth; ${warning}`,
        result: { source: '/m/wide.pth', models: [], skipped: [], warnings: [warning] },
      }),
    });
    await waitFor(() => expect(app.notices.find((n) => n.level === 'warning')?.text).toBe(warning));
  });

  it('renames, attaches an index and deletes after confirmation', async () => {
    const be = backend({
      rename_model: (a) => ({ ...ada, name: a.name }),
      attach_model_index: () => ({ ...ada, index_sha256: '34'.repeat(32) }),
      delete_model: () => null,
    });
    render(Models);
    await waitFor(() => expect(screen.getAllByTestId('model-row')).toHaveLength(2));

    await fireEvent.click(within(row('Ada')).getByTestId('model-rename'));
    const input = within(row('Ada')).getByTestId('model-rename-input');
    await fireEvent.input(input, { target: { value: ' Ada final ' } });
    await fireEvent.keyDown(input, { key: 'Enter' });
    await waitFor(() => expect(be.argsOf('rename_model')).toEqual([{ id: 1, name: 'Ada final' }]));
    await waitFor(() => expect(row('Ada final')).toBeTruthy());

    await fireEvent.click(within(row('Ada final')).getByTestId('model-attach-index'));
    await fireEvent.input(within(row('Ada final')).getByTestId('model-index-path'), { target: { value: '/m/ada.index' } });
    await fireEvent.click(within(row('Ada final')).getByTestId('model-index-submit'));
    await waitFor(() => expect(be.argsOf('attach_model_index')).toEqual([{ id: 1, index: '/m/ada.index' }]));
    await waitFor(() => expect(within(row('Ada')).getByTestId('model-index')).toHaveTextContent(/^\s*index\s*$/));

    await fireEvent.click(within(row('Bo')).getByTestId('model-delete'));
    expect(be.argsOf('delete_model')).toEqual([]);
    await fireEvent.click(within(row('Bo')).getByTestId('model-delete-confirm'));
    await waitFor(() => expect(be.argsOf('delete_model')).toEqual([{ id: 2 }]));
    await waitFor(() => expect(screen.getAllByTestId('model-row')).toHaveLength(1));
  });

  it('shows the backend message when an import is refused, and keeps what was typed', async () => {
    backend({
      import_voice: () => {
        throw { kind: 'not_found', message: '/m/bad.pth: no such file or folder' };
      },
    });
    render(Models);
    await fireEvent.input(screen.getByTestId('model-import-source'), { target: { value: '/m/bad.pth' } });
    await fireEvent.click(screen.getByTestId('model-import-submit'));
    await waitFor(() =>
      expect(app.notices).toContainEqual(
        expect.objectContaining({ level: 'error', text: 'Could not import bad.pth: /m/bad.pth: no such file or folder' }),
      ),
    );
    await waitFor(() => expect(screen.getByTestId('model-import-submit')).toBeEnabled());
    expect(screen.getByTestId('model-import-source')).toHaveValue('/m/bad.pth');
  });

  it('blends two chosen models with their weights, and exports one with new info', async () => {
    const be = backend({
      blend_models: (a) => makeModel({ id: 9, name: a.name }),
      export_model: (a) => `${a.outDir}/${a.edits.model_name}.pth`,
    });
    render(Models);
    await screen.findAllByTestId('model-row');
    const picks = screen.getAllByTestId('blend-pick');
    expect(screen.getByTestId('blend-submit')).toBeDisabled();
    await fireEvent.click(picks[0]);
    await fireEvent.click(picks[1]);
    const weights = screen.getAllByTestId('blend-weight');
    await fireEvent.input(weights[0], { target: { value: '0.7' } });
    await fireEvent.input(weights[1], { target: { value: '0.3' } });
    await fireEvent.input(screen.getByTestId('blend-name'), { target: { value: 'Ada-Bo' } });
    await fireEvent.click(screen.getByTestId('blend-submit'));
    await waitFor(() => expect(be.argsOf('blend_models')).toEqual([{ ids: [1, 2], weights: [0.7, 0.3], name: 'Ada-Bo' }]));

    await fireEvent.change(screen.getByTestId('export-model'), { target: { value: '1' } });
    await fireEvent.input(screen.getByTestId('export-name'), { target: { value: 'Ada final' } });
    await fireEvent.input(screen.getByTestId('export-info'), { target: { value: '200 epochs' } });
    await fireEvent.input(screen.getByTestId('export-dir'), { target: { value: '/out' } });
    await fireEvent.click(screen.getByTestId('export-submit'));
    await waitFor(() =>
      expect(be.argsOf('export_model')).toEqual([
        { id: 1, edits: { model_name: 'Ada final', author: null, description: null, info: '200 epochs' }, outDir: '/out' },
      ]),
    );
  });
});
