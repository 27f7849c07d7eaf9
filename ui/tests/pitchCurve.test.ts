import { describe, expect, it } from 'vitest';
import { PITCH_CEILING_HZ, PITCH_FLOOR_HZ, pitchPolylines } from '../src/lib/pitchCurve';

describe('pitch curve', () => {
  it('draws one polyline per voiced run on a log-frequency axis', () => {
    const lines = pitchPolylines([0, PITCH_FLOOR_HZ, PITCH_CEILING_HZ, 0, 0, 10_000], 100, 50);
    expect(lines).toEqual(['20.0,50.0 40.0,0.0', '100.0,0.0']);
    expect(pitchPolylines([0, 0], 100, 50)).toEqual([]);
    // A geometric mean lies half way up.
    const middle = Math.sqrt(PITCH_FLOOR_HZ * PITCH_CEILING_HZ);
    expect(pitchPolylines([middle], 10, 50)).toEqual(['0.0,25.0']);
  });
});
