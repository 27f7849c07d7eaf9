// The take view's pitch curve: the tracked f0 drawn as SVG polylines on a log-frequency axis,
// one polyline per voiced run, so unvoiced frames leave gaps.

export const PITCH_FLOOR_HZ = 50;
export const PITCH_CEILING_HZ = 1100;

/** `points` attributes for each voiced run, x in 0..width over the frames, y in 0..height. */
export function pitchPolylines(f0: readonly number[], width: number, height: number): string[] {
  const span = Math.log(PITCH_CEILING_HZ / PITCH_FLOOR_HZ);
  const x = (i: number) => (f0.length > 1 ? (i / (f0.length - 1)) * width : 0);
  const y = (hz: number) => {
    const clamped = Math.min(Math.max(hz, PITCH_FLOOR_HZ), PITCH_CEILING_HZ);
    return height - (Math.log(clamped / PITCH_FLOOR_HZ) / span) * height;
  };
  const runs: string[] = [];
  let run: string[] = [];
  f0.forEach((hz, i) => {
    if (hz > 0) {
      run.push(`${x(i).toFixed(1)},${y(hz).toFixed(1)}`);
    } else if (run.length > 0) {
      runs.push(run.join(' '));
      run = [];
    }
  });
  if (run.length > 0) runs.push(run.join(' '));
  return runs;
}
