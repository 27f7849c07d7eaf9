import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import Models from '../src/pages/Models.svelte';
import { app } from '../src/lib/stores.svelte';
import { assetList, doctorReport, essentialAssets, makeModel, mockBackend } from './helpers';

const ada = makeModel({ id: 1, name: 'Ada', version: 'v2', sample_rate: 40000, f0: true, index_sha256: null });
const bo = makeModel({
  id: 2,
  name: 'Bo',
  version: 'v1',
  sample_rate: 32000,
  f0: false,
  index_sha256: '12'.repeat(32),
  metadata: { speakers: 3, feature_dim: 256, epoch: 40, author: 'Kim' },
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

    expect(await screen.findByTestId('models-dir')).toHaveTextContent('/data/models');
    const files = screen.getAllByTestId('asset-row');
    expect(files.map((f) => [f.dataset.name, f.dataset.state])).toEqual([
      ['hubert', 'verified'],
      ['rmvpe', 'missing'],
    ]);
    expect(files[1]).toHaveTextContent('rmvpe.pt');
    expect(files[1]).toHaveTextContent('convert (rmvpe f0)');
  });

  it('imports by path, renames, attaches an index and deletes after confirmation', async () => {
    const be = backend({
      import_model: (a) => makeModel({ id: 3, name: 'Cy', index_sha256: a.index ? 'ee'.repeat(32) : null }),
      rename_model: (a) => ({ ...ada, name: a.name }),
      attach_model_index: () => ({ ...ada, index_sha256: '34'.repeat(32) }),
      delete_model: () => null,
    });
    render(Models);
    await waitFor(() => expect(screen.getAllByTestId('model-row')).toHaveLength(2));

    await fireEvent.input(screen.getByTestId('model-import-weights'), { target: { value: '/m/cy.pth' } });
    await fireEvent.input(screen.getByTestId('model-import-index'), { target: { value: '/m/cy.index' } });
    await fireEvent.click(screen.getByTestId('model-import-submit'));
    await waitFor(() => expect(screen.getAllByTestId('model-row')).toHaveLength(3));
    expect(be.argsOf('import_model')).toEqual([{ weights: '/m/cy.pth', index: '/m/cy.index', name: null, voiceId: null }]);
    expect(app.notices.map((n) => n.text)).toContain('Imported model "Cy" (v2, 40 kHz, with index)');

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
    await waitFor(() => expect(screen.getAllByTestId('model-row')).toHaveLength(2));
  });

  it('shows the backend message when an import is refused', async () => {
    backend({
      import_model: () => {
        throw { kind: 'invalid_input', message: '/m/bad.pth: not an RVC model' };
      },
    });
    render(Models);
    await fireEvent.input(screen.getByTestId('model-import-weights'), { target: { value: '/m/bad.pth' } });
    await fireEvent.click(screen.getByTestId('model-import-submit'));
    await waitFor(() =>
      expect(app.notices).toContainEqual(
        expect.objectContaining({ level: 'error', text: 'Could not import bad.pth: /m/bad.pth: not an RVC model' }),
      ),
    );
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
