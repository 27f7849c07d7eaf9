import { describe, expect, it } from 'vitest';
import { pastedLink, planDrop } from '../src/lib/dropRouting';

describe('planDrop', () => {
  it('pairs a lone .pth with the index dropped beside it and keeps audio apart', () => {
    expect(planDrop(['/in/voice.PTH', '/in/a.wav', '/in/added_IVF51_Flat_nprobe_1_x_v1.index', '/in/b.flac'])).toEqual({
      audio: ['/in/a.wav', '/in/b.flac'],
      voices: [{ source: '/in/voice.PTH', index: '/in/added_IVF51_Flat_nprobe_1_x_v1.index' }],
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
    expect(plan.voices).toEqual([
      { source: '/m/alto.pth', index: '/m/added_IVF128_Flat_nprobe_1_alto_v1.index' },
      { source: '/m/alto_v2.pth', index: '/m/added_IVF256_Flat_nprobe_1_alto_v2_v2.index' },
    ]);
    expect(plan.strayIndexes).toEqual(['/m/added_IVF9_Flat_nprobe_1_tenor_v2.index']);
  });

  it('reports an index dropped without a model', () => {
    expect(planDrop(['/m/x.index'])).toEqual({ audio: [], voices: [], strayIndexes: ['/m/x.index'] });
  });

  it('imports voice archives and folders (paths without an extension) as voices, apart from audio', () => {
    expect(planDrop(['/d/Voices.ZIP', '/d/take.wav', '/d/RVC weights', '/d/added_IVF1_Flat_tenor_v2.index'])).toEqual({
      audio: ['/d/take.wav'],
      voices: [
        { source: '/d/Voices.ZIP', index: null },
        { source: '/d/RVC weights', index: null },
      ],
      // A .zip or a folder is paired by the backend from what it holds, not with a dropped index.
      strayIndexes: ['/d/added_IVF1_Flat_tenor_v2.index'],
    });
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
