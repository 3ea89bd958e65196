import { join } from 'node:path';
import type { LdapBindsInput } from './drivers/ldap-binds.ts';
import { REPO } from './latchkey.ts';
import type { Measurement } from './measurement.ts';
import { spawnTracked } from './processes.ts';

type Drivers = { 'ldap-binds': LdapBindsInput };

/**
 * Runs a Node driver (bench/drivers/<name>.ts) as its own process, like wrk: the load comes from
 * outside the bench process, whose own work (and garbage collection) stays out of the figures.
 */
export async function runDriver<K extends keyof Drivers>(name: K, input: Drivers[K]): Promise<Measurement> {
  const driver = spawnTracked(
    `driver ${name}`,
    process.execPath,
    ['--import', 'tsx', join(REPO, 'bench', 'drivers', `${name}.ts`), JSON.stringify(input)],
    {
      cwd: REPO,
      capture: true,
    },
  );
  const guard = setTimeout(() => void driver.stop(1_000), (input.seconds + 60) * 1000);
  const { code } = await driver.exited;
  clearTimeout(guard);
  await driver.stop();
  const lines = driver.output().trim().split('\n');
  if (code !== 0) throw new Error(`driver ${name} exited with ${code}:\n${driver.output()}`);
  return JSON.parse(lines[lines.length - 1]!) as Measurement;
}
