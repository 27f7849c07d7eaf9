import { describe, expect, it, vi } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { Channel } from '@tauri-apps/api/core';
import Record from '../src/pages/Record.svelte';
import { makeTake, makeVoice, mockBackend } from './helpers';

const devices = [
  { name: 'Built-in Mic', is_default: false, channels: 1, sample_rate: 44100 },
  { name: 'USB Interface', is_default: true, channels: 2, sample_rate: 48000 },
];

function backend() {
  return mockBackend({
    list_input_devices: () => devices,
    list_voices: () => [makeVoice({ id: 4, name: 'Bass' })],
    start_recording: () => null,
    cancel_recording: () => null,
    stop_recording: (a) => makeTake({ id: 77, name: a.name ?? 'Recording 1', origin: 'recorded', voice_id: a.voiceId }),
  });
}

describe('Record page', () => {
  it('preselects the default device and records a take', async () => {
    const be = backend();
    render(Record);
    const select = (await screen.findByTestId('record-device')) as HTMLSelectElement;
    await waitFor(() => expect(select.value).toBe('USB Interface'));
    expect(screen.getByTestId('record-stop')).toBeDisabled();
    expect(screen.getByTestId('record-elapsed')).toHaveTextContent('0:00.0');

    await fireEvent.click(screen.getByTestId('record-start'));
    await waitFor(() => expect(be.argsOf('start_recording')).toHaveLength(1));
    const args = be.argsOf('start_recording')[0];
    expect(args.device).toBe('USB Interface');
    expect(args.onLevel).toBeInstanceOf(Channel);
    await waitFor(() => expect(screen.getByTestId('record-stop')).toBeEnabled());
    expect(screen.getByTestId('record-start')).toBeDisabled();

    // Level messages drive the meter, the clip latch and the clock.
    args.onLevel.onmessage({ peak: 0.5, rms: 0.25, clipping: false, seconds: 2.34 });
    await waitFor(() => expect(screen.getByTestId('level-peak')).toHaveTextContent('-6.0 dBFS'));
    expect(screen.getByTestId('level-peak')).toHaveAttribute('data-peak', '0.5000');
    expect(screen.getByTestId('record-elapsed')).toHaveTextContent('0:02.3');
    expect(screen.getByTestId('level-clip')).toHaveAttribute('data-clipping', 'false');
    args.onLevel.onmessage({ peak: 1, rms: 0.7, clipping: true, seconds: 2.5 });
    args.onLevel.onmessage({ peak: 0.1, rms: 0.05, clipping: false, seconds: 2.6 });
    await waitFor(() => expect(screen.getByTestId('level-clip')).toHaveAttribute('data-clipping', 'true'));

    await fireEvent.input(screen.getByTestId('record-name'), { target: { value: 'Scratch vox' } });
    await fireEvent.change(screen.getByTestId('record-voice'), { target: { value: '4' } });
    await fireEvent.click(screen.getByTestId('record-stop'));
    await waitFor(() => expect(be.argsOf('stop_recording')).toEqual([{ name: 'Scratch vox', voiceId: 4 }]));
    const session = await screen.findByTestId('session-take');
    expect(session).toHaveAttribute('data-take-name', 'Scratch vox');
    expect(session.querySelector('[data-testid="take-play"]')).not.toBeNull();
    expect(screen.getByTestId('record-start')).toBeEnabled();
  });

  it('unlatches the clip light after a second', async () => {
    const be = backend();
    render(Record);
    await waitFor(() => expect((screen.getByTestId('record-device') as HTMLSelectElement).value).toBe('USB Interface'));
    await fireEvent.click(screen.getByTestId('record-start'));
    await waitFor(() => expect(screen.getByTestId('record-stop')).toBeEnabled());
    vi.useFakeTimers();
    be.argsOf('start_recording')[0].onLevel.onmessage({ peak: 1, rms: 0.9, clipping: true, seconds: 1 });
    await vi.advanceTimersByTimeAsync(500);
    expect(screen.getByTestId('level-clip')).toHaveAttribute('data-clipping', 'true');
    await vi.advanceTimersByTimeAsync(700);
    expect(screen.getByTestId('level-clip')).toHaveAttribute('data-clipping', 'false');
    vi.useRealTimers();
  });

  it('cancels a recording through cancel_recording and passes null for an empty name', async () => {
    const be = backend();
    render(Record);
    await waitFor(() => expect((screen.getByTestId('record-device') as HTMLSelectElement).value).toBe('USB Interface'));
    await fireEvent.click(screen.getByTestId('record-start'));
    await waitFor(() => expect(screen.getByTestId('record-cancel')).toBeEnabled());
    await fireEvent.click(screen.getByTestId('record-cancel'));
    await waitFor(() => expect(be.argsOf('cancel_recording')).toHaveLength(1));
    await waitFor(() => expect(screen.getByTestId('record-start')).toBeEnabled());

    await fireEvent.click(screen.getByTestId('record-start'));
    await waitFor(() => expect(screen.getByTestId('record-stop')).toBeEnabled());
    await fireEvent.click(screen.getByTestId('record-stop'));
    await waitFor(() => expect(be.argsOf('stop_recording')).toEqual([{ name: null, voiceId: null }]));
  });
});
