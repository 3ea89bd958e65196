import { describe, expect, it } from '@jest/globals';
import type { Amr } from '../../src/login/model.ts';
import { nextStep, sessionStep, signInStep, type NextStep, type SignInFacts } from '../../src/web/sign-in/next-step.ts';

const NOW = 1_800_000_000_000;
const MINUTE = 60_000;

type Session = NonNullable<SignInFacts['session']>;

/** A password sign-in a minute ago, not for this request, proved recently enough to enrol. */
const session = (over: Partial<Session> = {}): Session => ({
  authTime: NOW - MINUTE,
  amr: ['pwd'],
  fresh: false,
  provedRecently: true,
  ...over,
});

/** A signed-in browser at a client that needs nothing more: no second factor, no consent. */
const facts = (over: Partial<SignInFacts> = {}): SignInFacts => ({
  prompt: new Set(),
  now: NOW,
  upstream: false,
  session: session(),
  application: false,
  mfaRequired: false,
  consentRequired: false,
  consentAnswered: false,
  scopes: ['openid', 'profile'],
  ...over,
});

const prompt = (...values: string[]) => new Set(values);

/** As steps.ts does: answer each fact the rules ask for, and ask again. Returns the step and what was asked. */
function settle(
  f: SignInFacts,
  known: { allowed?: boolean; hasFactor?: boolean; granted?: string[] } = {},
): { step: NextStep; asked: string[] } {
  const asked: string[] = [];
  let step = nextStep(f);
  while (step.kind === 'ask') {
    asked.push(step.fact);
    if (step.fact === 'allowed') f = { ...f, allowed: known.allowed ?? true };
    else if (step.fact === 'hasFactor') f = { ...f, hasFactor: known.hasFactor ?? false };
    else f = { ...f, granted: new Set(known.granted ?? []) };
    step = nextStep(f);
  }
  return { step, asked };
}

describe('1. signing in', () => {
  it('a browser without a session gets the login page', () => {
    expect(nextStep(facts({ session: undefined }))).toEqual({ kind: 'login' });
  });

  it('prompt=none without a session is refused with login_required, never a page', () => {
    expect(nextStep(facts({ session: undefined, prompt: prompt('none') }))).toEqual({
      kind: 'refused',
      error: 'login_required',
      because: 'not_signed_in',
    });
  });

  it('a request naming a configured upstream (idp) goes straight there instead of the login page', () => {
    expect(nextStep(facts({ session: undefined, upstream: true }))).toEqual({ kind: 'upstream' });
    // prompt=none still shows nothing, not even the upstream's page.
    expect(nextStep(facts({ session: undefined, upstream: true, prompt: prompt('none') }))).toMatchObject({
      kind: 'refused',
      error: 'login_required',
    });
  });

  it('a session is enough without prompt=login or max_age', () => {
    expect(signInStep(facts())).toBeUndefined();
    expect(nextStep(facts())).toEqual({ kind: 'continue' });
  });

  it('prompt=login signs an existing session in again, unless it signed in just now for this request', () => {
    expect(nextStep(facts({ prompt: prompt('login') }))).toEqual({ kind: 'login' });
    expect(nextStep(facts({ prompt: prompt('login'), upstream: true }))).toEqual({ kind: 'upstream' });
    expect(nextStep(facts({ prompt: prompt('login'), session: session({ fresh: true }) }))).toEqual({ kind: 'continue' });
  });

  it('max_age: a session older than it signs in again; one exactly that old does not', () => {
    const signedInAt = (agoMs: number) => session({ authTime: NOW - agoMs });
    expect(nextStep(facts({ maxAge: 300, session: signedInAt(300_001) }))).toEqual({ kind: 'login' });
    expect(nextStep(facts({ maxAge: 300, session: signedInAt(300_000) }))).toEqual({ kind: 'continue' });
    expect(nextStep(facts({ maxAge: 0, session: signedInAt(1) }))).toEqual({ kind: 'login' });
    expect(nextStep(facts({ maxAge: 300, session: { ...signedInAt(3_600_000), fresh: true } }))).toEqual({ kind: 'continue' });
  });

  it('max_age with prompt=none and a session too old is refused with login_required', () => {
    expect(nextStep(facts({ maxAge: 60, prompt: prompt('none'), session: session({ authTime: NOW - 2 * MINUTE }) }))).toMatchObject({
      kind: 'refused',
      error: 'login_required',
      because: 'not_signed_in',
    });
  });
});

describe('2. the access policy (docs/access-and-claims.md)', () => {
  const at = (over: Partial<SignInFacts> = {}) => facts({ application: true, ...over });

  it('a session at an application is checked, and a refused user gets the access_denied step', () => {
    expect(settle(at(), { allowed: false })).toEqual({ step: { kind: 'access_denied' }, asked: ['allowed'] });
    expect(settle(at(), { allowed: true })).toEqual({ step: { kind: 'continue' }, asked: ['allowed'] });
  });

  it('an existing session never skips it: an old one, a fresh one, one that proved a second factor', () => {
    for (const s of [session({ authTime: NOW - 7 * 3_600_000 }), session({ fresh: true }), session({ amr: ['pwd', 'otp', 'mfa'] })]) {
      expect(settle(at({ session: s }), { allowed: false }).step).toEqual({ kind: 'access_denied' });
    }
  });

  it('prompt=none is refused with the page too, never an error sent back to the application', () => {
    expect(settle(at({ prompt: prompt('none') }), { allowed: false }).step).toEqual({ kind: 'access_denied' });
  });

  it('it comes after signing in and before the second factor, enrolment and consent', () => {
    // Not signed in: the login page, and nothing is checked (or audited) yet.
    expect(settle(at({ session: undefined }), { allowed: false })).toEqual({ step: { kind: 'login' }, asked: [] });
    expect(settle(at({ prompt: prompt('login') }), { allowed: false })).toEqual({ step: { kind: 'login' }, asked: [] });
    const everything = at({ mfaRequired: true, consentRequired: true, consentAnswered: true });
    expect(settle(everything, { allowed: false })).toEqual({ step: { kind: 'access_denied' }, asked: ['allowed'] });
    expect(settle(everything, { allowed: true, hasFactor: false })).toEqual({ step: { kind: 'enrol' }, asked: ['allowed', 'hasFactor'] });
  });

  it('a flow of no application (the account page) asks nothing', () => {
    expect(settle(facts({ application: false }), { allowed: false })).toEqual({ step: { kind: 'continue' }, asked: [] });
  });
});

describe('3. the second factor (docs/multi-factor-sign-in.md)', () => {
  const needsMfa = (amr: Amr[], over: Partial<SignInFacts> = {}) => facts({ mfaRequired: true, session: session({ amr }), ...over });

  it('a password-only session at a client that needs a second factor: the code, for a user who has a factor', () => {
    expect(settle(needsMfa(['pwd']), { hasFactor: true })).toEqual({ step: { kind: 'second_factor' }, asked: ['hasFactor'] });
  });

  it('a user without a factor enrols one, on a session proved in the last five minutes', () => {
    expect(settle(needsMfa(['pwd']), { hasFactor: false }).step).toEqual({ kind: 'enrol' });
  });

  it('a user without a factor on an older session signs in again before enrolling', () => {
    const older = facts({ mfaRequired: true, session: session({ provedRecently: false }) });
    expect(settle(older, { hasFactor: false }).step).toEqual({ kind: 'sign_in_again' });
    // …while a user with a factor is just asked for it, however old the session.
    expect(settle(older, { hasFactor: true }).step).toEqual({ kind: 'second_factor' });
  });

  it('prompt=none is refused with login_required, without asking whether the user has a factor', () => {
    expect(settle(needsMfa(['pwd'], { prompt: prompt('none') }))).toEqual({
      step: { kind: 'refused', error: 'login_required', because: 'second_factor' },
      asked: [],
    });
  });

  it('a session that used a second factor goes on', () => {
    expect(settle(needsMfa(['pwd', 'otp', 'mfa']))).toEqual({ step: { kind: 'continue' }, asked: [] });
    expect(settle(needsMfa(['hwk', 'mfa']))).toEqual({ step: { kind: 'continue' }, asked: [] });
  });

  it('nothing is asked when no second factor is required, whatever the session used', () => {
    expect(settle(facts({ session: session({ amr: ['pwd'] }) }))).toEqual({ step: { kind: 'continue' }, asked: [] });
  });

  it('the second factor comes before consent', () => {
    const both = needsMfa(['pwd'], { consentRequired: true, consentAnswered: true });
    expect(settle(both, { hasFactor: true }).step).toEqual({ kind: 'second_factor' });
  });

  it('a session that must sign in again does that first, second factor or not', () => {
    expect(nextStep(needsMfa(['pwd'], { prompt: prompt('login') }))).toEqual({ kind: 'login' });
  });
});

describe('4. consent (docs/decisions.md "Consent")', () => {
  const consenting = (over: Partial<SignInFacts> = {}) => facts({ consentRequired: true, scopes: ['openid', 'email'], ...over });

  it('a client without requireConsent asks nothing and reads no consents', () => {
    expect(settle(facts({ consentRequired: false }))).toEqual({ step: { kind: 'continue' }, asked: [] });
    // A consent form posted to such a client is not answered either.
    expect(settle(facts({ consentRequired: false, consentAnswered: true })).step).toEqual({ kind: 'continue' });
  });

  it('the first time, the consent page', () => {
    expect(settle(consenting(), { granted: [] })).toEqual({ step: { kind: 'consent' }, asked: ['granted'] });
  });

  it('scopes granted before, or a subset of them, ask nothing', () => {
    expect(settle(consenting(), { granted: ['openid', 'email'] }).step).toEqual({ kind: 'continue' });
    expect(settle(consenting(), { granted: ['openid', 'email', 'profile', 'groups'] }).step).toEqual({ kind: 'continue' });
  });

  it('one scope not granted before asks again', () => {
    expect(settle(consenting(), { granted: ['openid', 'profile'] }).step).toEqual({ kind: 'consent' });
  });

  it('prompt=consent asks again even for scopes granted before', () => {
    expect(settle(consenting({ prompt: prompt('consent') }), { granted: ['openid', 'email'] }).step).toEqual({ kind: 'consent' });
  });

  it('prompt=none is refused with consent_required when it would ask, and goes on when it would not', () => {
    expect(settle(consenting({ prompt: prompt('none') }), { granted: ['openid'] }).step).toEqual({
      kind: 'refused',
      error: 'consent_required',
    });
    expect(settle(consenting({ prompt: prompt('none') }), { granted: ['openid', 'email'] }).step).toEqual({ kind: 'continue' });
  });

  it('a posted consent form is answered (consent.ts), before any consents are read', () => {
    expect(settle(consenting({ consentAnswered: true }))).toEqual({ step: { kind: 'answer_consent' }, asked: [] });
  });
});

describe('5. continue', () => {
  it('a session that holds, with its second factor and consent, continues with the request', () => {
    const done = facts({ mfaRequired: true, consentRequired: true, session: session({ amr: ['pwd', 'otp', 'mfa'] }) });
    expect(settle(done, { granted: ['openid', 'profile'] })).toEqual({ step: { kind: 'continue' }, asked: ['granted'] });
  });

  it('the session’s steps are the whole rule once signing in is settled', () => {
    const f = facts({ mfaRequired: true, hasFactor: true });
    expect(nextStep(f)).toEqual(sessionStep(f));
  });
});
