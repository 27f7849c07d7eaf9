import { describe, expect, it, vi } from 'vitest';
import { player } from '../src/lib/player';
import { FakeAudioContext, installFakeAudio, mockBackend } from './helpers';

describe('player', () => {
  it('plays, reports state, and ends via onended', async () => {
    installFakeAudio();
    const be = mockBackend({ get_take_audio: () => [1, 2, 3, 4] });
    const states: string[] = [];
    const off = player.subscribe((s) => states.push(s.status));
    await player.play(5, 'Five');
    expect(player.state).toMatchObject({ status: 'playing', takeId: 5, label: 'Five', duration: 3.2 });
    FakeAudioContext.last!.sources.at(-1).onended();
    expect(player.state.status).toBe('stopped');
    expect(states).toEqual(['stopped', 'loading', 'playing', 'stopped']);
    // Decoded audio is cached.
    await player.play(5);
    expect(be.argsOf('get_take_audio')).toHaveLength(1);
    player.stop();
    off();
  });

  it('ends the playing state even if the audio clock never runs', async () => {
    installFakeAudio();
    mockBackend({ get_take_audio: () => [1, 2, 3, 4] });
    vi.useFakeTimers();
    await player.play(6);
    expect(player.state.status).toBe('playing');
    await vi.advanceTimersByTimeAsync(3200 + 900);
    expect(player.state.status).toBe('playing');
    await vi.advanceTimersByTimeAsync(200);
    expect(player.state.status).toBe('stopped');
  });

  it('a stop during loading wins over the pending play', async () => {
    installFakeAudio();
    let release!: () => void;
    mockBackend({ get_take_audio: () => new Promise((r) => (release = () => r([1, 2])) ) });
    const p = player.play(7);
    await vi.waitFor(() => expect(release).toBeTypeOf('function'));
    expect(player.state.status).toBe('loading');
    player.stop();
    release();
    await p;
    expect(player.state.status).toBe('stopped');
    expect(FakeAudioContext.last!.sources).toHaveLength(0);
  });
});
