import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import EffectsEditor from '../src/components/EffectsEditor.svelte';
import { studio } from '../src/lib/studio.svelte';
import { EFFECTS, chainToSend, moved, newEffect, problems, withEffect, withParam, withoutEffect } from '../src/lib/effects';
import type { EffectChain, EffectPreset } from '../src/lib/api';
import { mockBackend } from './helpers';

const empty: EffectChain = { effects: [] };

describe('effects chain edits', () => {
  it('adds effects with their defaults, reorders, sets and removes them', () => {
    let chain = withEffect(withEffect(withEffect(empty, 'gain'), 'reverb'), 'limiter');
    expect(chain.effects.map((e) => e.effect)).toEqual(['gain', 'reverb', 'limiter']);
    expect(chain.effects[1]).toEqual({ effect: 'reverb', decay_seconds: 1.5, pre_delay_ms: 20, damping: 0.3, mix: 0.25 });
    chain = moved(chain, 2, -1);
    expect(chain.effects.map((e) => e.effect)).toEqual(['gain', 'limiter', 'reverb']);
    expect(moved(chain, 0, -1)).toEqual(chain);
    expect(moved(chain, 2, 5).effects.map((e) => e.effect)).toEqual(['gain', 'limiter', 'reverb']);
    chain = withParam(chain, 0, 'db', -3);
    expect(chain.effects[0]).toEqual({ effect: 'gain', db: -3 });
    chain = withoutEffect(chain, 1);
    expect(chain.effects.map((e) => e.effect)).toEqual(['gain', 'reverb']);
  });

  it('names each parameter outside its range as the backend does', () => {
    expect(EFFECTS.flatMap((e) => problems({ effects: [newEffect(e.name)] }))).toEqual([]);
    const chain = withParam(withEffect(withEffect(empty, 'gain'), 'delay'), 1, 'feedback', 1.5);
    expect(problems(chain)).toEqual(['effect 2 (delay): feedback must be between 0 and 0.95, not 1.5']);
    expect(problems(withParam(chain, 0, 'db', NaN))[0]).toMatch(/^effect 1 \(gain\): db must be/);
  });

  it('sends no chain when it is empty', () => {
    expect(chainToSend(empty)).toBeNull();
    const one = withEffect(empty, 'gain');
    expect(chainToSend(one)).toBe(one);
  });
});

describe('effects editor', () => {
  const hall: EffectPreset = {
    name: 'Hall',
    chain: { effects: [newEffect('high_pass'), newEffect('reverb')] },
    built_in: true,
    created_at: null,
    updated_at: null,
  };

  it('loads a preset, edits the chain and saves it under a name', async () => {
    studio.reset();
    const saved: EffectPreset[] = [];
    const be = mockBackend({
      list_effect_presets: () => [hall, ...saved],
      save_effect_preset: ({ name, chain }) => {
        const preset = { name, chain, built_in: false, created_at: 'x', updated_at: 'x' };
        saved.push(preset);
        return preset;
      },
      delete_effect_preset: () => null,
    });
    render(EffectsEditor);
    await waitFor(() => expect(screen.getByTestId('effects-preset')).toHaveTextContent('Hall (built-in)'));
    await fireEvent.change(screen.getByTestId('effects-preset'), { target: { value: 'Hall' } });
    expect(screen.getByTestId('effects-delete')).toBeDisabled();
    await fireEvent.click(screen.getByTestId('effects-load'));
    expect(screen.getAllByTestId('effect').map((e) => e.dataset.effect)).toEqual(['high_pass', 'reverb']);

    await fireEvent.change(screen.getByTestId('effects-add-kind'), { target: { value: 'limiter' } });
    await fireEvent.click(screen.getByTestId('effects-add'));
    const [, reverb] = screen.getAllByTestId('effect');
    await fireEvent.click(within(reverb).getByTestId('effect-down'));
    expect(screen.getAllByTestId('effect').map((e) => e.dataset.effect)).toEqual(['high_pass', 'limiter', 'reverb']);
    await fireEvent.input(within(screen.getAllByTestId('effect')[2]).getByTestId('effect-param-mix'), {
      target: { value: '2' },
    });
    expect(screen.getByTestId('effects-issues')).toHaveTextContent('effect 3 (reverb): mix must be between 0 and 1, not 2');
    await fireEvent.input(screen.getByTestId('effects-save-name'), { target: { value: 'Mine' } });
    expect(screen.getByTestId('effects-save')).toBeDisabled();
    await fireEvent.input(within(screen.getAllByTestId('effect')[2]).getByTestId('effect-param-mix'), {
      target: { value: '0.5' },
    });
    await fireEvent.click(screen.getByTestId('effects-save'));
    await waitFor(() => expect(be.argsOf('save_effect_preset')).toHaveLength(1));
    const sent = be.argsOf('save_effect_preset')[0];
    expect(sent.name).toBe('Mine');
    expect(sent.chain.effects.map((e: { effect: string }) => e.effect)).toEqual(['high_pass', 'limiter', 'reverb']);
    expect(sent.chain.effects[2].mix).toBe(0.5);
    await waitFor(() => expect(screen.getByTestId('effects-delete')).not.toBeDisabled());
    await fireEvent.click(screen.getByTestId('effects-delete'));
    await waitFor(() => expect(be.argsOf('delete_effect_preset')).toEqual([{ name: 'Mine' }]));

    await fireEvent.click(within(screen.getAllByTestId('effect')[0]).getByTestId('effect-remove'));
    expect(studio.effects.effects.map((e) => e.effect)).toEqual(['limiter', 'reverb']);
  });
});

describe('conversions with effects', () => {
  it('send the chain the editor holds, and none when it is empty', async () => {
    studio.reset();
    const be = mockBackend({ submit_conversions: () => [5] });
    await studio.convert([{ take: 1 }], [2]);
    studio.effects = withEffect(empty, 'reverb');
    await studio.convert([{ take: 1 }], [2]);
    const sent = be.argsOf('submit_conversions').map((a) => a.effects);
    expect(sent).toEqual([null, { effects: [newEffect('reverb')] }]);
  });
});
