import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { adminCliToken, graphqlPost, type GraphQLAnswer } from '../helpers/admin-api.ts';
import { advanceClock, resetClock } from '../helpers/clock.ts';
import { databaseKinds } from '../helpers/databases.ts';
import { eventually, timed } from '../helpers/eventually.ts';
import { basic, postForm } from '../helpers/http.ts';
import { freePort } from '../helpers/ports.ts';
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../helpers/server.ts';
import { WebhookReceiver } from '../helpers/webhook-receiver.ts';

const HOUR = 3600 * 1000;

const REGISTER = `mutation Register($url: String!, $events: [String!]!, $description: String) {
  registerWebhook(url: $url, events: $events, description: $description) {
    secret
    webhook { id url events description createdBy createdAt failingSince }
  }
}`;
const LIST = '{ webhooks { id url events description failingSince } }';
const DELETE = 'mutation Delete($id: ID!) { deleteWebhook(id: $id) }';
const DELIVERIES = `query Deliveries($id: ID!, $first: Int, $after: String) {
  webhookDeliveries(webhookId: $id, first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { node { eventId kind attempt status httpStatus at error } }
  }
}`;

interface Delivery {
  eventId: string;
  kind: string;
  attempt: number;
  status: string;
  httpStatus: number | null;
  at: string;
  error: string | null;
}

/**
 * Webhooks (docs/webhooks.md): registration with the secret shown once and the outbound rules, signed
 * deliveries a real receiver verifies with the `standardwebhooks` library, order and retries, each
 * attempt in `webhookDeliveries`, kind patterns, the give-up after the retry window, and sign-ins that
 * a dead endpoint does not slow.
 */
describe.each(databaseKinds)('webhooks on %s', (kind) => {
  let server: TestServer;
  let token: string;
  let app: { clientId: string; clientSecret: string | null };
  const receivers: WebhookReceiver[] = [];
  const registered: string[] = [];

  beforeAll(async () => {
    // A quick poll, so a delivery follows its event within the test; the retry waits are the defaults (5 s, 30 s, …).
    server = await startTestServer(kind, { webhooks: { pollInterval: 100 } });
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    await server.user('pia', 'pia-password-1');
    app = await server.client({ grantTypes: ['password'], scopes: ['openid'] });
  });
  afterEach(async () => {
    // Every test's endpoints go with it: the next test's events are for its own.
    for (const id of registered.splice(0)) await gql(DELETE, { id });
    await Promise.all(receivers.splice(0).map((r) => r.close()));
    // Back to real time once no endpoint holds a lease taken on the moved clock: a receiver checks the
    // signature's timestamp against its own clock.
    resetClock();
  });
  afterAll(async () => {
    await server?.stop();
    resetClock();
  });

  /** The admin API, with a new token when the clock was moved past the last one's expiry. */
  async function gql(query: string, variables?: Record<string, unknown>): Promise<GraphQLAnswer> {
    const res = await graphqlPost(server, token, query, variables);
    if (res.errors?.[0]?.extensions?.code !== 'UNAUTHENTICATED') return res;
    token = (await adminCliToken(server, 'admin', ADMIN_PASSWORD, { scope: 'admin' })).access_token;
    return graphqlPost(server, token, query, variables);
  }

  async function register(url: string, events: string[], description?: string) {
    const res = await gql(REGISTER, { url, events, description });
    expect(res.errors).toBeUndefined();
    const made = res.data!.registerWebhook as { secret: string; webhook: { id: string } & Record<string, unknown> };
    registered.push(made.webhook.id);
    return made;
  }

  async function receiver(events: string[]) {
    const r = await WebhookReceiver.start();
    receivers.push(r);
    const made = await register(r.url, events);
    r.secret = made.secret;
    return { receiver: r, id: made.webhook.id };
  }

  async function deliveries(id: string): Promise<Delivery[]> {
    const res = await gql(DELIVERIES, { id, first: 100 });
    expect(res.errors).toBeUndefined();
    const page = res.data!.webhookDeliveries as { edges: Array<{ node: Delivery }> };
    return page.edges.map((e) => e.node);
  }

  /** A sign-in by the password grant: `login.success`, or `login.failure` for a name nobody has. */
  const signIn = (username = 'pia', password = 'pia-password-1') =>
    postForm(
      `${server.url}/oauth/v20/token`,
      { grant_type: 'password', username, password, scope: 'openid' },
      { authorization: basic(app.clientId, app.clientSecret!) },
    );

  test('the signing secret is shown once, and a URL Latchkey never calls is refused at registration', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data', 'http://[::ffff:169.254.169.254]/', 'http://0.0.0.0:8080/']) {
      const res = await gql(REGISTER, { url, events: ['*'] });
      expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'url' });
    }
    for (const url of ['ftp://example.com/', '/relative', 'https://user:pw@example.com/hook', 'https://example.com/#x']) {
      expect((await gql(REGISTER, { url, events: ['*'] })).errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'url' });
    }
    for (const events of [[], ['user.'], ['*.failure'], ['User.Created'], ['user.**']]) {
      const res = await gql(REGISTER, { url: 'https://hooks.example.com/latchkey', events });
      expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'events' });
    }
    expect((await gql(LIST)).data!.webhooks).toEqual([]);

    const made = await register('https://hooks.example.com/latchkey', ['user.*', 'login.failure', 'login.failure'], 'the SIEM team');
    expect(made.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(made.webhook).toMatchObject({ events: ['user.*', 'login.failure'], description: 'the SIEM team', failingSince: null });
    // Listed without it, and no field gives it.
    const listed = await gql(LIST);
    expect(listed.data!.webhooks).toEqual([
      {
        id: made.webhook.id,
        url: 'https://hooks.example.com/latchkey',
        events: ['user.*', 'login.failure'],
        description: 'the SIEM team',
        failingSince: null,
      },
    ]);
    expect(JSON.stringify(listed)).not.toContain(made.secret);
    expect((await gql('{ webhooks { secret } }')).errors?.[0]?.message).toMatch(/Cannot query field "secret"/);
    // Stored sealed: neither the secret nor its key part is in the database.
    const [row] = await server.sql('webhooks').where({ id: made.webhook.id }).select('secret_enc');
    expect(row!.secret_enc).not.toContain(made.secret.slice('whsec_'.length, 20));
    // Audited without it.
    const audit = await server.sql('audit_events').where({ kind: 'admin.change' }).orderBy('id', 'desc').first();
    expect(JSON.parse(audit!.details as string)).toMatchObject({
      action: 'webhook.register',
      webhookId: made.webhook.id,
      origin: 'https://hooks.example.com',
    });
    expect(audit!.details).not.toContain(made.secret);
  });

  test('events are delivered signed and in order; a failing endpoint gets each try again and holds the rest back', async () => {
    const { receiver: r, id } = await receiver(['login.failure']);
    r.failNext = 2;
    for (const name of ['nobody-1', 'nobody-2', 'nobody-3']) expect((await signIn(name, 'wrong-password-1')).status).toBe(400);
    // A sign-in that succeeds is no `login.failure`: not sent.
    expect((await signIn()).status).toBe(200);

    await eventually('the first try failed', async () => r.arrivals.length === 1);
    let tries = await deliveries(id);
    expect(tries.map((d) => [d.attempt, d.status, d.httpStatus, d.error])).toEqual([
      [2, 'PENDING', null, null],
      [1, 'FAILED', 500, 'HTTP 500'],
    ]);
    const first = tries[1]!.eventId;
    expect(new Date(tries[0]!.at).getTime() - new Date(tries[1]!.at).getTime()).toBeGreaterThanOrEqual(5000);
    expect((await gql(LIST)).data!.webhooks).toEqual([expect.objectContaining({ id, failingSince: expect.any(String) })]);
    // Nothing after it went out meanwhile: the endpoint's next event waits for this one.
    expect(new Set(r.arrivals)).toEqual(new Set([`evt_${first}`]));

    advanceClock(5_500);
    await eventually('the second try failed', async () => r.arrivals.length === 2);
    advanceClock(30_500);
    await eventually('all three delivered', async () => r.accepted.length === 3);

    expect(r.unverified).toEqual([]);
    expect(r.arrivals.slice(0, 3)).toEqual([`evt_${first}`, `evt_${first}`, `evt_${first}`]);
    expect(r.kinds()).toEqual(['login.failure', 'login.failure', 'login.failure']);
    const ids = r.accepted.map((m) => Number(m.data.id));
    expect(ids[0]).toBe(Number(first));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    // The audit event as `auditEvents` shows it.
    expect(r.accepted[0]!.data).toMatchObject({ kind: 'login.failure', details: { reason: expect.any(String) } });
    expect(new Date(r.accepted[0]!.timestamp).toISOString()).toBe(r.accepted[0]!.timestamp);

    tries = await deliveries(id);
    const of = (eventId: string) =>
      tries
        .filter((d) => d.eventId === eventId)
        .map((d) => [d.attempt, d.status, d.httpStatus])
        .reverse();
    expect(of(first)).toEqual([
      [1, 'FAILED', 500],
      [2, 'FAILED', 500],
      [3, 'DELIVERED', 200],
    ]);
    for (const later of ids.slice(1)) expect(of(String(later))).toEqual([[1, 'DELIVERED', 200]]);
    expect((await gql(LIST)).data!.webhooks).toEqual([expect.objectContaining({ id, failingSince: null })]);

    // Paged newest first.
    const page = await gql(DELIVERIES, { id, first: 2 });
    const firstPage = page.data!.webhookDeliveries as { totalCount: number; pageInfo: { hasNextPage: boolean; endCursor: string } };
    expect(firstPage.totalCount).toBe(5);
    expect(firstPage.pageInfo.hasNextPage).toBe(true);
    const next = await gql(DELIVERIES, { id, first: 10, after: firstPage.pageInfo.endCursor });
    expect((next.data!.webhookDeliveries as { edges: unknown[] }).edges).toHaveLength(3);
    expect((await gql(DELIVERIES, { id: 'no-such-webhook' })).errors?.[0]?.extensions).toMatchObject({ code: 'NOT_FOUND' });
  });

  test('kind patterns: a kind, a first part and .*, and *', async () => {
    const failures = await receiver(['login.failure']);
    const admin = await receiver(['admin.*']);
    const all = await receiver(['*']);
    expect((await signIn('nobody-4', 'wrong-password-1')).status).toBe(400);
    expect((await signIn()).status).toBe(200);
    await server.user('quin', 'quin-password-1');

    await eventually('every endpoint has its events', async () => all.receiver.kinds().includes('admin.change'));
    await eventually('the others too', async () => failures.receiver.accepted.length === 1);
    expect(failures.receiver.kinds()).toEqual(['login.failure']);
    // The admin changes after its registration: the next endpoint's registration, the new user.
    await eventually('the new user reached admin.*', async () => admin.receiver.accepted.length === 2);
    expect(admin.receiver.kinds()).toEqual(['admin.change', 'admin.change']);
    expect(admin.receiver.accepted.map((m) => m.data.details?.action)).toEqual(['webhook.register', 'user.create']);
    // `*`: every kind, in the order recorded (a sign-in also issues a token).
    const kinds = all.receiver.kinds();
    expect(kinds[0]).toBe('login.failure');
    expect(kinds.indexOf('login.success')).toBeGreaterThan(0);
    expect(kinds.at(-1)).toBe('admin.change');
    expect(kinds.every((k) => ['login.failure', 'login.success', 'token.issued', 'admin.change'].includes(k))).toBe(true);
  });

  test('a dead endpoint does not slow a sign-in', async () => {
    /** The median time of `n` sign-ins, in ms. */
    async function signInTime(n: number): Promise<number> {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        const [res, ms] = await timed(() => signIn());
        expect(res.status).toBe(200);
        times.push(ms);
      }
      return times.sort((a, b) => a - b)[Math.floor(n / 2)]!;
    }
    await signInTime(3);
    const without = await signInTime(15);

    // One endpoint holds every request unanswered (each try runs to its 10 s timeout); another refuses connections.
    const hanging = await receiver(['*']);
    hanging.receiver.hang = true;
    const refusedPort = await freePort();
    registered.push((await register(`http://127.0.0.1:${refusedPort}/hook`, ['*'])).webhook.id);
    expect((await signIn()).status).toBe(200);
    await eventually('a delivery is hanging', async () => hanging.receiver.arrivals.length === 1);

    const withDead = await signInTime(15);
    // The same order of magnitude: a sign-in that waited for the endpoint would take its 10 s timeout.
    if (process.env.WEBHOOK_TIMINGS) process.stdout.write(`sign-in median: ${without} ms without, ${withDead} ms with dead endpoints\n`);
    expect(withDead).toBeLessThan(Math.max(without, 5) * 10);
    expect(hanging.receiver.arrivals).toHaveLength(1);
    const refused = registered.at(-1)!;
    await eventually('the refusing endpoint was tried', async () => (await deliveries(refused)).length > 0);
    expect((await deliveries(refused)).at(-1)).toMatchObject({ attempt: 1, status: 'FAILED', httpStatus: null, error: 'cannot connect' });
  });

  test('an event is given up after its retry window, audited, and the endpoint gets the next one', async () => {
    const port = await freePort();
    const { webhook } = await register(`http://127.0.0.1:${port}/hook`, ['login.failure']);
    expect((await signIn('nobody-5', 'wrong-password-1')).status).toBe(400);
    await eventually('the first try failed', async () => (await deliveries(webhook.id)).some((d) => d.status === 'FAILED'));
    // Recorded while the endpoint was failing already: when its window is over too, it is given up untried.
    expect((await signIn('nobody-6', 'wrong-password-1')).status).toBe(400);
    const [, firstTry] = await deliveries(webhook.id);

    advanceClock(25 * HOUR);
    await eventually('given up', async () => (await deliveries(webhook.id)).some((d) => d.status === 'GIVEN_UP'));
    await eventually('both given up', async () => (await deliveries(webhook.id)).filter((d) => d.status === 'GIVEN_UP').length === 2);
    const tries = await deliveries(webhook.id);
    const given = tries.filter((d) => d.status === 'GIVEN_UP');
    expect(given.map((d) => [d.eventId === firstTry!.eventId, d.attempt, d.error])).toEqual(
      expect.arrayContaining([
        [true, 2, 'cannot connect'],
        [false, 0, 'endpoint failing all through the retry window'],
      ]),
    );
    // One audit event for the two, naming the endpoint and why, in fixed words.
    const audited = await server.sql('audit_events').where({ kind: 'webhook.given_up' }).select('details');
    expect(audited.map((a) => JSON.parse(a.details as string))).toEqual([
      {
        webhookId: webhook.id,
        events: 2,
        firstEventId: firstTry!.eventId,
        lastEventId: expect.any(String),
        attempts: 2,
        error: 'cannot connect',
      },
    ]);

    // The next event is tried afresh, on the schedule again.
    expect((await signIn('nobody-7', 'wrong-password-1')).status).toBe(400);
    await eventually('the new event was tried', async () =>
      (await deliveries(webhook.id)).some((d) => d.status === 'FAILED' && d.eventId !== firstTry!.eventId),
    );
    const latest = (await deliveries(webhook.id)).filter((d) => ![firstTry!.eventId, ...given.map((g) => g.eventId)].includes(d.eventId));
    expect(latest.map((d) => [d.attempt, d.status])).toEqual([
      [2, 'PENDING'],
      [1, 'FAILED'],
    ]);
  });

  test('a deleted webhook is sent nothing more, and its place in the queue goes', async () => {
    const { receiver: r, id } = await receiver(['login.failure']);
    expect(
      await server
        .sql('event_sinks')
        .where({ name: `webhook:${id}` })
        .count({ n: '*' }),
    ).toEqual([{ n: kind === 'postgres' ? '1' : 1 }]);
    expect((await gql(DELETE, { id })).data).toEqual({ deleteWebhook: true });
    registered.splice(registered.indexOf(id), 1);
    expect((await gql(DELETE, { id })).data).toEqual({ deleteWebhook: false });
    expect(
      await server
        .sql('event_sinks')
        .where({ name: `webhook:${id}` })
        .count({ n: '*' }),
    ).toEqual([{ n: kind === 'postgres' ? '0' : 0 }]);
    // Another endpoint of the same events has its delivery: by then the deleted one would have had it too.
    const witness = await receiver(['login.failure']);
    expect((await signIn('nobody-8', 'wrong-password-1')).status).toBe(400);
    await eventually('the other endpoint had it', async () => witness.receiver.accepted.length === 1);
    expect(r.arrivals).toEqual([]);
  });
});
