import { describe, expect, test } from '@jest/globals';
import pino from 'pino';
import { Breaker } from '../../src/identity/breaker.ts';
import { eventually } from '../helpers/eventually.ts';

/** The per-backend breaker of the identity chain (SPEC 7, "A hung directory"), on its own. */
describe('backend breaker', () => {
  const make = (probe: () => Promise<boolean>, probeTimeoutMs = 1000) =>
    new Breaker({ id: 'corp', probe, intervalMs: 20, probeTimeoutMs, logger: pino({ level: 'silent' }) });

  test('tripped, it stays down while probes fail (or throw, or hang) and is up again after the first that answers', async () => {
    const answers = [async () => false, async () => Promise.reject(new Error('refused')), () => new Promise<boolean>(() => undefined), async () => true];
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

  test('half-open: after a quick failure one call at a time may try the backend, and an answer closes it; after a hang none may', async () => {
    const breaker = make(async () => false);
    expect(breaker.admit()).toBe('closed');
    breaker.trip(3); // refused at once: trying again costs nothing
    expect(breaker.down).toBe(true);
    const trial = breaker.admit();
    expect(trial).toBe('trial');
    expect(breaker.admit()).toBe(false); // one trial at a time; the others skip at once
    breaker.settle('trial', false);
    expect(breaker.down).toBe(true);
    expect(breaker.admit()).toBe('trial');
    breaker.settle('trial', true);
    expect(breaker.down).toBe(false);
    expect(breaker.admit()).toBe('closed');

    breaker.trip(5000); // cut off by the timeout: only the probe may spend it again
    expect(breaker.admit()).toBe(false);
    breaker.stop();
  });
});
