import { describe, expect, test } from '@jest/globals';
import pino from 'pino';
import { Breaker } from '../../src/identity/breaker.ts';
import { eventually } from '../helpers/eventually.ts';

/** The per-backend breaker of the identity chain (docs/decisions.md, "A hung directory"), on its own. */
describe('backend breaker', () => {
  const make = (probe: () => Promise<boolean>, probeTimeoutMs = 1000) =>
    new Breaker({ id: 'corp', probe, intervalMs: 20, probeTimeoutMs, logger: pino({ level: 'silent' }) });

  test('tripped, it stays down while probes fail (or throw, or hang) and is up again after the first that answers', async () => {
    const answers = [
      async () => false,
      async () => Promise.reject(new Error('refused')),
      () => new Promise<boolean>(() => undefined),
      async () => true,
    ];
    let probes = 0;
    const breaker = make(() => answers[Math.min(probes++, answers.length - 1)]!(), 100);
    expect(breaker.down).toBe(false);
    breaker.trip();
    expect(breaker.down).toBe(true);
    await eventually('a probe finds it answering', async () => !breaker.down, { withinMs: 5000, everyMs: 5 });
    expect(probes).toBe(4);
    breaker.stop();
  });

  test('one probe at a time, and none after stop()', async () => {
    let running = 0;
    let most = 0;
    let probes = 0;
    const breaker = make(async () => {
      probes++;
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 30));
      running--;
      return false;
    });
    breaker.trip();
    breaker.trip(); // tripping again changes nothing
    await eventually('a few probes ran', async () => probes >= 3, { withinMs: 5000, everyMs: 5 });
    breaker.stop();
    const after = probes;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(most).toBe(1);
    expect(probes).toBe(after); // a probe in flight finishes, but none starts
    expect(breaker.down).toBe(true);
  });

  test('half-open: a call that finds it down starts a probe at once and goes ahead when it answers; a hung probe costs a call only the short wait', async () => {
    let answer: () => Promise<boolean> = async () => false;
    let probes = 0;
    const breaker = new Breaker({
      id: 'corp',
      probe: () => {
        probes++;
        return answer();
      },
      intervalMs: 60_000,
      probeTimeoutMs: 60_000,
      trialWaitMs: 100,
      logger: pino({ level: 'silent' }),
    });
    expect(await breaker.admit()).toBe(true);
    breaker.trip();
    expect(await breaker.admit()).toBe(false); // the probe, brought forward, found it still down
    expect(probes).toBe(1);
    answer = async () => true; // the directory is back: the next call need not wait a minute for the probe
    expect(await breaker.admit()).toBe(true);
    expect(breaker.down).toBe(false);
    expect(probes).toBe(2);

    breaker.trip();
    answer = () => new Promise<boolean>(() => undefined); // hung
    const started = performance.now();
    expect(await breaker.admit()).toBe(false);
    expect(await breaker.admit()).toBe(false); // joins the hung probe for the short wait: no second probe
    expect(performance.now() - started).toBeLessThan(1000);
    expect(probes).toBe(3);
    breaker.stop();
  });
});
