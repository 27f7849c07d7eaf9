import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen } from '@testing-library/svelte';
import LossChart from '../src/components/LossChart.svelte';
import {
  formatValue,
  invert,
  linePath,
  nearest,
  niceStep,
  scale,
  thin,
  ticks,
  xDomain,
  yDomain,
} from '../src/lib/lineChart';

const pts = (...ys: number[]) => ys.map((y, i) => ({ x: i * 10, y }));

describe('chart scales', () => {
  it('widens a linear y range to whole nice steps, and a flat line to a band', () => {
    expect(niceStep(0.7)).toBe(1);
    expect(niceStep(1.3)).toBe(2);
    expect(niceStep(3)).toBe(5);
    expect(niceStep(42)).toBe(50);
    expect(niceStep(0.012)).toBe(0.02);
    expect(yDomain([pts(12.3, 47.9), pts(3.1)], 'linear')).toEqual({ min: 0, max: 50 });
    expect(yDomain([pts(2, 2)], 'linear')).toEqual({ min: 1.8, max: 2.2 });
    expect(yDomain([[]], 'linear')).toBeNull();
  });

  it('spans whole decades on a log scale and leaves out values it cannot draw', () => {
    expect(yDomain([pts(0, -1, 2, 40)], 'log')).toEqual({ min: 2, max: 40 });
    expect(yDomain([pts(3, 7)], 'log')).toEqual({ min: 1, max: 10 });
    expect(yDomain([pts(0, -2)], 'log')).toBeNull();
  });

  it('maps values onto pixels and back, linear and log', () => {
    const lin = scale({ min: 0, max: 50 }, 200, 0);
    expect(lin(0)).toBe(200);
    expect(lin(25)).toBe(100);
    expect(lin(50)).toBe(0);
    const log = scale({ min: 1, max: 100 }, 0, 100, 'log');
    expect(log(10)).toBeCloseTo(50);
    expect(invert({ min: 1, max: 100 }, 0, 100, 'log')(50)).toBeCloseTo(10);
    expect(invert({ min: 0, max: 400 }, 48, 448)(248)).toBe(200);
  });

  it('gives a unit-wide x range for a single step', () => {
    expect(xDomain([[{ x: 5, y: 1 }]])).toEqual({ min: 5, max: 6 });
    expect(xDomain([pts(1, 2, 3), [{ x: 100, y: 1 }]])).toEqual({ min: 0, max: 100 });
    expect(xDomain([])).toBeNull();
  });

  it('places ticks on nice values, and decades (with 2× and 5× when few) on a log scale', () => {
    expect(ticks({ min: 0, max: 50 }, 'linear', 5)).toEqual([0, 10, 20, 30, 40, 50]);
    expect(ticks({ min: 0, max: 0.3 }, 'linear', 3)).toEqual([0, 0.1, 0.2, 0.3]);
    expect(ticks({ min: 0.01, max: 100 }, 'log')).toEqual([0.01, 0.1, 1, 10, 100]);
    expect(ticks({ min: 1, max: 10 }, 'log')).toEqual([1, 2, 5, 10]);
  });
});

describe('chart paths', () => {
  it('draws a line through the points, breaking it where a log scale cannot draw', () => {
    const id = (v: number) => v;
    expect(linePath(pts(1, 2, 3), id, id, 'linear')).toBe('M0.0 1.0L10.0 2.0L20.0 3.0');
    expect(linePath(pts(1, 0, 3, 4), id, id, 'log')).toBe('M0.0 1.0M20.0 3.0L30.0 4.0');
    expect(linePath(pts(1, 0, 3), id, id, 'linear')).toBe('M0.0 1.0L10.0 0.0L20.0 3.0');
  });

  it('thins long series by averaging runs and keeps the latest point', () => {
    const long = Array.from({ length: 1001 }, (_, i) => ({ x: i, y: i % 2 }));
    const thinned = thin(long, 101);
    expect(thinned).toHaveLength(101);
    expect(thinned[0]).toEqual({ x: 4.5, y: 0.5 });
    expect(thinned[100]).toEqual({ x: 1000, y: 0 });
    expect(thin(pts(1, 2), 10)).toHaveLength(2);
  });

  it('finds the point nearest to the pointer', () => {
    const p = pts(5, 6, 7, 8);
    expect(nearest(p, 14)).toEqual({ x: 10, y: 6 });
    expect(nearest(p, 16)).toEqual({ x: 20, y: 7 });
    expect(nearest(p, -5)).toEqual({ x: 0, y: 5 });
    expect(nearest(p, 99)).toEqual({ x: 30, y: 8 });
    expect(nearest([], 1)).toBeNull();
  });

  it('formats values short', () => {
    expect(formatValue(12000)).toBe('12k');
    expect(formatValue(0.5)).toBe('0.5');
    expect(formatValue(42.123)).toBe('42.1');
    expect(formatValue(0)).toBe('0');
    expect(formatValue(0.00012)).toBe('1.2e-4');
  });
});

describe('LossChart', () => {
  const series = [
    { key: 'g_total', label: 'Generator', color: '#f00', points: pts(40, 30, 20) },
    { key: 'kl', label: 'KL', color: '#0f0', points: pts(4, 2, 1) },
  ];

  it('says what it is still waiting for, in the words its page gives', () => {
    render(LossChart, { series: [{ ...series[0], points: [] }], xLabel: 'block', empty: 'No blocks timed yet' });
    expect(screen.getByTestId('loss-chart')).toHaveTextContent('No blocks timed yet');
    expect(screen.getByTestId('loss-chart')).not.toHaveTextContent('losses');
    expect(screen.getByRole('img')).toHaveAttribute('aria-label', 'Generator over blocks');
  });

  it('says in its label what it plots and the latest values, and points at its other text equivalents', () => {
    render(LossChart, { series, empty: 'No losses', describedby: 'words table' });
    const img = screen.getByRole('img');
    expect(img).toHaveAttribute('aria-label', 'Generator, KL over steps; latest at step 20: Generator 20, KL 1');
    expect(img).toHaveAttribute('aria-describedby', 'words table');
  });

  it('gives each series its own step when their latest points differ', () => {
    render(LossChart, { series: [series[0], { ...series[1], points: pts(4, 2) }], empty: 'No losses' });
    expect(screen.getByRole('img')).toHaveAttribute(
      'aria-label',
      'Generator, KL over steps; latest: Generator 20 at step 20, KL 2 at step 10',
    );
  });

  it('hides a series from the legend, switches to log scale and reads out the step under the pointer', async () => {
    render(LossChart, { series, empty: 'No losses' });
    const chart = screen.getByTestId('loss-chart');
    expect(chart.querySelectorAll('path')).toHaveLength(2);
    await fireEvent.click(screen.getAllByTestId('loss-chart-series')[1]);
    expect(chart.dataset.series).toBe('g_total');
    expect(chart.querySelectorAll('path')).toHaveLength(1);
    await fireEvent.click(screen.getByTestId('loss-chart-log'));
    expect(chart.dataset.scale).toBe('log');
    // jsdom lays nothing out: the plot spans x 48..588 of the default 600 px, steps 0..20.
    await fireEvent.mouseMove(chart.querySelector('svg')!, { clientX: 318 });
    const readout = screen.getByTestId('loss-chart-readout');
    expect(readout).toHaveTextContent('step 10');
    expect(readout).toHaveTextContent('Generator 30');
    expect(readout).not.toHaveTextContent('KL');
  });
});
