/** Directory sync in the admin API (docs/directory-sync.md "Watching it"): each backend's last pass, and a pass now. */
import { ENUM_VALUES } from '../enum-values.ts';
import { SyncOutcome, type Resolvers } from '../generated/graphql.ts';

const iso = (ms: number) => new Date(ms).toISOString();
/** The generated enum of the service's outcome words (the same strings: ENUM_VALUES.SyncOutcome). */
const OUTCOME = { applied: SyncOutcome.Applied, refused: SyncOutcome.Refused, failed: SyncOutcome.Failed } as const;

export const directorySyncResolvers: Resolvers = {
  SyncOutcome: ENUM_VALUES.SyncOutcome,
  IdentityBackend: {
    // An upstream shares no ids with the chain's backends' sync rows, but is never read whole.
    lastSync: async (backend, _a, { app }) => {
      if (backend.type !== 'backend') return null;
      const last = await app.directorySync.lastSync(backend.id);
      if (!last) return null;
      const lastSuccessAt = last.lastSuccessAt === null ? null : iso(last.lastSuccessAt);
      return { ...last, outcome: OUTCOME[last.outcome], at: iso(last.at), lastSuccessAt };
    },
    syncInterval: (backend, _a, { app }) => (backend.type === 'backend' ? app.directorySync.interval(backend.id) : null),
  },
  Mutation: {
    syncBackend: async (_p, { id }, { app, actor }) => {
      const result = await app.directorySync.run(id, {
        origin: { ip: actor.ip ?? undefined, requestId: actor.requestId ?? undefined },
        actor,
      });
      return { ...result, outcome: OUTCOME[result.outcome], at: iso(result.at) };
    },
  },
};
