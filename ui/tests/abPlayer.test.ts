import { describe, expect, it } from 'vitest';
import { AbPlayer, bufferRms, loudnessMatchGains } from '../src/lib/abPlayer';
import { drawTrial, guessProbability } from '../src/lib/abx';
import { FakeAudioContext, fakeBuffer } from './helpers';

function setup(levels = [0.5, 0.25, 0.4], seconds = [3, 3.2, 3.1]) {
  const ctx = new FakeAudioContext();
  const tracks = levels.map((level, i) => ({ key: `t${i}`, label: `Track ${i}`, buffer: fakeBuffer(seconds[i], level) }));
  const ab = new AbPlayer(ctx as unknown as AudioContext, tracks);
  const gains = () => ctx.gains.map((g) => g.gain.value);
  return { ctx, ab, gains };
}

describe('AbPlayer', () => {
  it('starts every track together on one clock, each through its own gain, only the active one heard', () => {
    const { ctx, ab, gains } = setup();
    expect(gains()).toEqual([1, 0, 0]);
    ctx.currentTime = 5;
    ab.play();
    expect(ctx.sources).toHaveLength(3);
    const starts = ctx.sources.map((s) => s.startedWith);
    expect(new Set(starts.map((s) => s[0])).size).toBe(1);
    expect(starts[0][0]).toBeGreaterThan(5);
    expect(starts.every((s) => s[1] === 0)).toBe(true);
    ctx.sources.forEach((s, i) => expect(s.target).toBe(ctx.gains[i]));
    expect(ab.duration).toBe(3);
  });

  it('switching only moves gains: no source restarts, and the position carries on', () => {
    const { ctx, ab, gains } = setup();
    ab.play();
    ctx.currentTime = 1.23;
    const before = ab.position();
    expect(before).toBeCloseTo(1.2, 5);
    ab.select(2);
    expect(gains()).toEqual([0, 0, 1]);
    expect(ctx.sources).toHaveLength(3);
    expect(ctx.sources.every((s) => s.started && s.stops === 0)).toBe(true);
    expect(ab.starts).toBe(1);
    expect(ab.position()).toBe(before);
    // A short ramp from the current value, not a jump (which clicks).
    const ramp = ctx.gains[2].gain.automation.at(-1);
    expect(ramp).toMatchObject({ method: 'ramp', value: 1 });
    expect(ramp.time).toBeGreaterThan(1.23);
    expect(ramp.time).toBeLessThan(1.25);
    ctx.currentTime = 2;
    expect(ab.position()).toBeCloseTo(1.97, 5);
  });

  it('pause keeps the position, play resumes from it, and seek restarts every source at the new point', () => {
    const { ctx, ab } = setup();
    ab.play();
    ctx.currentTime = 1.03;
    ab.pause();
    expect(ab.playing).toBe(false);
    expect(ctx.sources.every((s) => s.stops === 1)).toBe(true);
    ctx.currentTime = 9;
    expect(ab.position()).toBeCloseTo(1, 5);
    ab.play();
    expect(ctx.sources.slice(3).map((s) => s.startedWith[1])).toEqual([1, 1, 1].map((v) => expect.closeTo(v, 5)));
    ab.seek(2.5);
    expect(ctx.sources).toHaveLength(9);
    expect(ctx.sources.slice(6).every((s) => s.startedWith[1] === 2.5)).toBe(true);
    expect(ab.starts).toBe(3);
    ab.seek(99);
    expect(ctx.sources.slice(9).every((s) => s.startedWith[1] === 3)).toBe(true);
  });

  it('loops every source over the common length, and otherwise stops at the end', () => {
    const { ctx, ab } = setup();
    ab.setLoop(true);
    ab.play();
    expect(ctx.sources.every((s) => s.loop && s.loopStart === 0 && s.loopEnd === 3)).toBe(true);
    ctx.currentTime = 0.03 + 4;
    expect(ab.position()).toBeCloseTo(1, 5);
    expect(ab.tick()).toBe(false);
    // Turning the loop off mid-play keeps the position continuous.
    ab.setLoop(false);
    expect(ab.position()).toBeCloseTo(1, 5);
    expect(ctx.sources.every((s) => !s.loop)).toBe(true);
    ctx.currentTime += 1.5;
    expect(ab.tick()).toBe(false);
    ctx.currentTime += 0.6;
    expect(ab.tick()).toBe(true);
    expect(ab.playing).toBe(false);
    expect(ab.position()).toBe(0);
  });

  it('loudness matching turns each track down to the quietest and reports the dB applied', () => {
    const { ab, gains } = setup([0.5, 0.25, 0.4]);
    expect(ab.matchDb(0)).toBe(0);
    ab.setLoudnessMatch(true);
    expect(ab.matchDb(0)).toBeCloseTo(-6.02, 2);
    expect(ab.matchDb(1)).toBeCloseTo(0, 5);
    expect(ab.matchDb(2)).toBeCloseTo(-4.08, 2);
    expect(gains()[0]).toBeCloseTo(0.5, 5);
    ab.select(2);
    expect(gains()[0]).toBe(0);
    expect(gains()[2]).toBeCloseTo(0.625, 5);
    ab.setLoudnessMatch(false);
    expect(gains()).toEqual([0, 0, 1]);
  });

  it('measures RMS over all channels and leaves silent tracks out of matching', () => {
    expect(bufferRms(fakeBuffer(1, 0.3))).toBeCloseTo(0.3, 5);
    expect(loudnessMatchGains([0.2, 0, 0.1])).toEqual([0.5, 1, 1]);
    expect(loudnessMatchGains([0, 0])).toEqual([1, 1]);
  });
});

describe('ABX', () => {
  it('hides A or B as X at random', () => {
    expect(drawTrial(4, 7, () => 0.2).hidden).toBe(4);
    expect(drawTrial(4, 7, () => 0.8).hidden).toBe(7);
  });

  it('gives the chance of such a score by guessing', () => {
    expect(guessProbability({ trials: 4, correct: 4 })).toBeCloseTo(1 / 16, 10);
    expect(guessProbability({ trials: 3, correct: 0 })).toBe(1);
    expect(guessProbability({ trials: 10, correct: 9 })).toBeCloseTo(11 / 1024, 10);
  });
});
