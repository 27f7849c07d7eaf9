import { describe, expect, it } from 'vitest';
import { pastedLink, planDrop } from '../src/lib/dropRouting';

describe('planDrop', () => {
  it('pairs a lone .pth with the index dropped beside it and keeps audio apart', () => {
    expect(planDrop(['/in/voice.PTH', '/in/a.wav', '/in/added_IVF51_Flat_nprobe_1_x_v1.index', '/in/b.flac'])).toEqual({
      audio: ['/in/a.wav', '/in/b.flac'],
      models: [{ weights: '/in/voice.PTH', index: '/in/added_IVF51_Flat_nprobe_1_x_v1.index' }],
      archives: [],
      strayIndexes: [],
    });
  });

  it('matches indexes to several models by name, and reports the ones that match none', () => {
    const plan = planDrop([
      '/m/alto.pth',
      '/m/alto_v2.pth',
      '/m/added_IVF256_Flat_nprobe_1_alto_v2_v2.index',
      '/m/added_IVF128_Flat_nprobe_1_alto_v1.index',
      '/m/added_IVF9_Flat_nprobe_1_tenor_v2.index',
    ]);
    expect(plan.models).toEqual([
      { weights: '/m/alto.pth', index: '/m/added_IVF128_Flat_nprobe_1_alto_v1.index' },
      { weights: '/m/alto_v2.pth', index: '/m/added_IVF256_Flat_nprobe_1_alto_v2_v2.index' },
    ]);
    expect(plan.strayIndexes).toEqual(['/m/added_IVF9_Flat_nprobe_1_tenor_v2.index']);
  });

  it('reports an index dropped without a model', () => {
    expect(planDrop(['/m/x.index'])).toEqual({ audio: [], models: [], archives: [], strayIndexes: ['/m/x.index'] });
  });

  it('keeps voice archives apart from audio', () => {
    const plan = planDrop(['/d/Voices.ZIP', '/d/take.wav']);
    expect(plan.archives).toEqual(['/d/Voices.ZIP']);
    expect(plan.audio).toEqual(['/d/take.wav']);
  });
});

describe('pastedLink', () => {
  it('takes one http(s) link and nothing else', () => {
    expect(pastedLink('  https://huggingface.co/a/b/resolve/main/v.zip\n')).toBe('https://huggingface.co/a/b/resolve/main/v.zip');
    expect(pastedLink('HTTP://host/v.pth')).toBe('HTTP://host/v.pth');
    expect(pastedLink('see https://host/v.zip')).toBeNull();
    expect(pastedLink('https://host/a.zip https://host/b.zip')).toBeNull();
    expect(pastedLink('/home/me/v.zip')).toBeNull();
  });
});
