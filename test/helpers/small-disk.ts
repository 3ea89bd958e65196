import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A small filesystem of the test's own, to fill up under a running server and free again. */
export interface SmallDisk {
  dir: string;
  /** Writes a file until the filesystem is full (ENOSPC). */
  fill(): void;
  /** Deletes that file: the space is back. */
  free(): void;
  unmount(): void;
}

/**
 * A tmpfs of `megabytes` (needs root: `mount -t tmpfs`), so that SQLite meets a real ENOSPC. A
 * machine where the test may not mount fails the test rather than skipping it.
 */
export function mountSmallDisk(megabytes: number): SmallDisk {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-small-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`cannot mount a ${megabytes} MB tmpfs for the disk-full test (it needs root): ${(err as Error).message}`);
  }
  const filler = join(dir, 'filler');
  return {
    dir,
    fill() {
      try {
        writeFileSync(filler, Buffer.alloc(megabytes * 1024 * 1024));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
        return;
      }
      throw new Error('the small disk did not fill up');
    },
    free() {
      unlinkSync(filler);
    },
    unmount() {
      execFileSync('umount', [dir], { stdio: 'pipe' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
