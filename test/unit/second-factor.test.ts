import { describe, expect, it } from '@jest/globals';
import type { Amr } from '../../src/login/model.ts';
import { needsSecondFactor } from '../../src/mfa/second-factor.ts';

const off = { required: false };
const on = { required: true };
const plainClient = { requireMfa: false };
const mfaClient = { requireMfa: true };
const signIn = (...amr: Amr[]) => ({ amr });

describe('needsSecondFactor: whether a second factor is required', () => {
  it('is not, with neither mfa.required nor the client’s requireMfa', () => {
    expect(needsSecondFactor(off, plainClient, signIn('pwd'))).toEqual({ required: false, missing: false });
  });

  it('is, for every client, with mfa.required', () => {
    expect(needsSecondFactor(on, plainClient).required).toBe(true);
    expect(needsSecondFactor(on, mfaClient).required).toBe(true);
  });

  it('is, with mfa.required off, for a client with requireMfa', () => {
    expect(needsSecondFactor(off, mfaClient).required).toBe(true);
  });

  it('follows mfa.required alone without a client (the account page, a SAML service provider)', () => {
    expect(needsSecondFactor(on).required).toBe(true);
    expect(needsSecondFactor(off).required).toBe(false);
    expect(needsSecondFactor(off, null).required).toBe(false);
  });
});

describe('needsSecondFactor: whether it is still missing', () => {
  it('is missing from a password-only sign-in', () => {
    expect(needsSecondFactor(off, mfaClient, signIn('pwd'))).toEqual({ required: true, missing: true });
  });

  it('is not missing once the sign-in has `mfa` (a code, a passkey after a password, a passkey alone)', () => {
    expect(needsSecondFactor(on, plainClient, signIn('pwd', 'otp', 'mfa')).missing).toBe(false);
    expect(needsSecondFactor(on, plainClient, signIn('pwd', 'hwk', 'mfa')).missing).toBe(false);
    expect(needsSecondFactor(on, plainClient, signIn('hwk', 'mfa')).missing).toBe(false);
  });

  it('keys on `mfa` alone: a factor listed without it does not count', () => {
    expect(needsSecondFactor(on, plainClient, signIn('otp')).missing).toBe(true);
    expect(needsSecondFactor(on, plainClient, signIn('fed')).missing).toBe(true);
  });

  it('is missing when the sign-in’s factors are unknown (a token from before they were kept) or there is no sign-in yet', () => {
    expect(needsSecondFactor(on, plainClient, { amr: null }).missing).toBe(true);
    expect(needsSecondFactor(on, plainClient).missing).toBe(true);
    expect(needsSecondFactor(on, plainClient, null).missing).toBe(true);
  });

  it('is never missing when none is required, whatever the sign-in used', () => {
    expect(needsSecondFactor(off, plainClient, signIn()).missing).toBe(false);
    expect(needsSecondFactor(off, plainClient, { amr: null }).missing).toBe(false);
    expect(needsSecondFactor(off, plainClient).missing).toBe(false);
  });
});
