import { InputError } from '../errors/service.ts';

const MAX_OWNERS = 50;

/**
 * An application's owners (docs/admin-api.md "Roles and permissions"): user ids, who may read and
 * change it with the `app-owner` role. Each once, at most 50; spaces around an id dropped.
 */
export function checkOwners(field: string, owners: readonly string[] | null | undefined): string[] {
  const ids = [...new Set((owners ?? []).map((o) => o.trim()))];
  if (ids.length > MAX_OWNERS) throw new InputError(field, `at most ${MAX_OWNERS} owners`);
  for (const id of ids) {
    if (id.length < 1 || id.length > 255 || /[\x00-\x1f\x7f]/.test(id)) {
      throw new InputError(field, `${JSON.stringify(id.slice(0, 64))} is not a user id: 1 to 255 characters, no control characters`);
    }
  }
  return ids;
}
