import { describe, expect, it } from '@jest/globals';
import { redirectUriMatches, sameRedirectUri } from '../../src/clients/redirect-match.ts';

describe('redirectUriMatches: a requested redirect URI against the registered ones', () => {
  it('matches character for character', () => {
    expect(redirectUriMatches(['https://app.example.com/cb'], 'https://app.example.com/cb')).toBe(true);
    expect(redirectUriMatches(['https://app.example.com/cb'], 'https://APP.example.com/cb')).toBe(false);
    expect(redirectUriMatches(['https://app.example.com/cb'], 'https://app.example.com/cb/')).toBe(false);
    expect(redirectUriMatches([], 'https://app.example.com/cb')).toBe(false);
  });

  it('a registered loopback IP literal over http matches any port (RFC 8252 §7.3)', () => {
    expect(redirectUriMatches(['http://127.0.0.1/cb'], 'http://127.0.0.1:40415/cb')).toBe(true);
    expect(redirectUriMatches(['http://127.0.0.1/cb'], 'http://127.0.0.1:1/cb')).toBe(true);
    expect(redirectUriMatches(['http://127.0.0.1/cb'], 'http://127.0.0.1:65535/cb')).toBe(true);
    expect(redirectUriMatches(['http://[::1]/cb'], 'http://[::1]:51000/cb')).toBe(true);
  });

  it('a port out of range matches nothing', () => {
    expect(redirectUriMatches(['http://127.0.0.1/cb'], 'http://127.0.0.1:0/cb')).toBe(false);
    expect(redirectUriMatches(['http://127.0.0.1/cb'], 'http://127.0.0.1:65536/cb')).toBe(false);
  });

  it('an empty path is `/`: http://127.0.0.1:40415 matches a registered http://127.0.0.1/', () => {
    expect(redirectUriMatches(['http://127.0.0.1/'], 'http://127.0.0.1:40415')).toBe(true);
    expect(redirectUriMatches(['http://127.0.0.1'], 'http://127.0.0.1:40415/')).toBe(true);
    expect(redirectUriMatches(['http://127.0.0.1/?x=1'], 'http://127.0.0.1:40415?x=1')).toBe(true);
  });

  it('the path and the query must still match', () => {
    expect(redirectUriMatches(['http://127.0.0.1/cb'], 'http://127.0.0.1:40415/other')).toBe(false);
    expect(redirectUriMatches(['http://127.0.0.1/cb'], 'http://127.0.0.1:40415/cb/')).toBe(false);
    expect(redirectUriMatches(['http://127.0.0.1/cb?x=1'], 'http://127.0.0.1:40415/cb?x=1')).toBe(true);
    expect(redirectUriMatches(['http://127.0.0.1/cb?x=1'], 'http://127.0.0.1:40415/cb?x=2')).toBe(false);
    expect(redirectUriMatches(['http://127.0.0.1/cb'], 'http://127.0.0.1:40415/cb?x=1')).toBe(false);
  });

  it('the loopback address must be the same one', () => {
    expect(redirectUriMatches(['http://127.0.0.1/cb'], 'http://[::1]:40415/cb')).toBe(false);
    expect(redirectUriMatches(['http://[::1]/cb'], 'http://127.0.0.1:40415/cb')).toBe(false);
  });

  it('a registration that names a port asked for that port only', () => {
    expect(redirectUriMatches(['http://127.0.0.1:8080/cb'], 'http://127.0.0.1:8080/cb')).toBe(true);
    expect(redirectUriMatches(['http://127.0.0.1:8080/cb'], 'http://127.0.0.1:9090/cb')).toBe(false);
    expect(redirectUriMatches(['http://127.0.0.1:8080/cb'], 'http://127.0.0.1/cb')).toBe(false);
  });

  it('localhost matches exactly (DNS or a hosts file may send it elsewhere)', () => {
    expect(redirectUriMatches(['http://localhost/cb'], 'http://localhost/cb')).toBe(true);
    expect(redirectUriMatches(['http://localhost/cb'], 'http://localhost:40415/cb')).toBe(false);
    expect(redirectUriMatches(['http://localhost:3000/cb'], 'http://localhost:3001/cb')).toBe(false);
  });

  it('https and every other host match exactly, loopback or not', () => {
    expect(redirectUriMatches(['https://127.0.0.1/cb'], 'https://127.0.0.1:8443/cb')).toBe(false);
    expect(redirectUriMatches(['http://app.example.com/cb'], 'http://app.example.com:8080/cb')).toBe(false);
  });

  it('a host that only starts like a loopback address is not one', () => {
    expect(redirectUriMatches(['http://127.0.0.1/cb'], 'http://127.0.0.1.evil.example/cb')).toBe(false);
    expect(redirectUriMatches(['http://127.0.0.1/cb'], 'http://127.0.0.1:80@evil.example/cb')).toBe(false);
    expect(redirectUriMatches(['http://127.0.0.1/'], 'http://127.0.0.1:80@evil.example')).toBe(false);
  });

  it('any one registered URI is enough', () => {
    expect(redirectUriMatches(['https://app.example.com/cb', 'http://127.0.0.1/cb'], 'http://127.0.0.1:5000/cb')).toBe(true);
  });
});

describe('sameRedirectUri: the token request’s redirect_uri against the authorize request’s (RFC 6749 §4.1.3)', () => {
  it('identical URIs are the same', () => {
    expect(sameRedirectUri('https://app.example.com/cb', 'https://app.example.com/cb')).toBe(true);
  });

  it('a loopback URI with an empty path is the same as with `/`, on the same port', () => {
    expect(sameRedirectUri('http://127.0.0.1:40415', 'http://127.0.0.1:40415/')).toBe(true);
    expect(sameRedirectUri('http://[::1]:40415/', 'http://[::1]:40415')).toBe(true);
  });

  it('the port is not free here: another port is another URI', () => {
    expect(sameRedirectUri('http://127.0.0.1:40415/cb', 'http://127.0.0.1:40416/cb')).toBe(false);
    expect(sameRedirectUri('http://127.0.0.1:40415/cb', 'http://127.0.0.1/cb')).toBe(false);
  });

  it('any other URI must be identical', () => {
    expect(sameRedirectUri('https://app.example.com', 'https://app.example.com/')).toBe(false);
    expect(sameRedirectUri('http://localhost:3000', 'http://localhost:3000/')).toBe(false);
  });
});
