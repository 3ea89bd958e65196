import { expect, test } from '@jest/globals';
import { TransactionGate } from '../../src/db/transaction-gate.ts';

test('the gate admits one transaction at a time, and is busy for as long as any is inside', async () => {
  const gate = new TransactionGate();
  let inside = 0;
  let most = 0;
  const busyWhileInside: boolean[] = [];
  const work = () =>
    gate.hold(async () => {
      inside++;
      most = Math.max(most, inside);
      await new Promise((r) => setTimeout(r, 5));
      busyWhileInside.push(gate.busy);
      inside--;
    });
  await Promise.all([work(), work(), work(), work()]);
  expect(most).toBe(1);
  expect(busyWhileInside).toEqual([true, true, true, true]);
  expect(gate.busy).toBe(false);
});

test('a statement waiting at the gate runs only once no transaction holds it', async () => {
  const gate = new TransactionGate();
  const order: string[] = [];
  const first = gate.hold(async () => {
    order.push('tx1');
    await new Promise((r) => setTimeout(r, 5));
  });
  const second = gate.hold(async () => {
    order.push('tx2');
    await new Promise((r) => setTimeout(r, 5));
  });
  const statement = gate.whenFree(() => order.push('statement'));
  await Promise.all([first, second, statement]);
  expect(order.indexOf('statement')).toBe(2);
});
