/**
 * The pages' only script, served as `/assets/passkey.js` (the CSP allows scripts from this origin
 * only, never inline). A form marked `data-passkey` gets its WebAuthn options from the server, asks the
 * browser's authenticator, and posts the answer back in the form itself, so the server answers with a
 * page or a redirect as for any other form. Without WebAuthn in the browser, the form stays hidden.
 */
export const passkeyScript = `'use strict';
(function () {
  var dec = function (s) {
    var b = atob(s.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((s.length + 3) % 4));
    return Uint8Array.from(b, function (c) { return c.charCodeAt(0); }).buffer;
  };
  var enc = function (buf) {
    var s = '';
    new Uint8Array(buf).forEach(function (b) { s += String.fromCharCode(b); });
    return btoa(s).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  };
  var field = function (form, name) { return form.elements.namedItem(name); };
  async function run(form) {
    var body = new URLSearchParams();
    ['csrf_token', 'pending', 'token'].forEach(function (n) { var f = field(form, n); if (f) body.set(n, f.value); });
    body.set('purpose', form.dataset.purpose);
    var res = await fetch(form.dataset.options, { method: 'POST', body: body, credentials: 'same-origin' });
    if (!res.ok) throw new Error('options ' + res.status);
    var got = await res.json();
    var o = got.options;
    o.challenge = dec(o.challenge);
    var answer;
    if (form.dataset.purpose === 'register') {
      o.user.id = dec(o.user.id);
      o.excludeCredentials = (o.excludeCredentials || []).map(function (c) { return Object.assign({}, c, { id: dec(c.id) }); });
      var made = await navigator.credentials.create({ publicKey: o });
      answer = { id: made.id, rawId: enc(made.rawId), type: made.type, authenticatorAttachment: made.authenticatorAttachment,
        clientExtensionResults: made.getClientExtensionResults(),
        response: { clientDataJSON: enc(made.response.clientDataJSON), attestationObject: enc(made.response.attestationObject),
          transports: made.response.getTransports ? made.response.getTransports() : [] } };
    } else {
      o.allowCredentials = (o.allowCredentials || []).map(function (c) { return Object.assign({}, c, { id: dec(c.id) }); });
      var used = await navigator.credentials.get({ publicKey: o });
      answer = { id: used.id, rawId: enc(used.rawId), type: used.type, authenticatorAttachment: used.authenticatorAttachment,
        clientExtensionResults: used.getClientExtensionResults(),
        response: { clientDataJSON: enc(used.response.clientDataJSON), authenticatorData: enc(used.response.authenticatorData),
          signature: enc(used.response.signature), userHandle: used.response.userHandle ? enc(used.response.userHandle) : undefined } };
    }
    field(form, 'webauthn_state').value = got.state;
    field(form, 'webauthn_response').value = JSON.stringify(answer);
    form.submit();
  }
  document.querySelectorAll('form[data-passkey]').forEach(function (form) {
    if (!window.PublicKeyCredential) return;
    form.hidden = false;
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      var status = form.querySelector('[role=status]');
      run(form).catch(function (err) {
        status.textContent = err && err.name === 'NotAllowedError' ? 'The passkey request was cancelled or timed out.' : 'The passkey did not work. Try again.';
      });
    });
  });
})();
`;
