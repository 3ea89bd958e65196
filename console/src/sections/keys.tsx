/** The signing keys of the JWKS, and a rotation (the new key is published at once and signs later). */
import { useState } from 'preact/hooks';
import { request } from '../api/graphql.ts';
import { RotateSigningKeysMutation, SigningKeysQuery, type SigningAlgorithm } from '../api/generated.ts';
import { Checkbox, Dialog, ErrorNote, Loading, useAction, useLoad, when, Notice } from '../ui/kit.tsx';

const ALGORITHMS: SigningAlgorithm[] = ['RS256', 'ES256'];

function state(k: { signing: boolean; retiredAt?: string | null; activatesAt: string }): string {
  if (k.signing) return 'signing';
  if (k.retiredAt && Date.parse(k.retiredAt) <= Date.now()) return 'retired';
  if (Date.parse(k.activatesAt) > Date.now()) return 'waiting';
  return 'published';
}

export function KeysSection() {
  const list = useLoad(() => request(SigningKeysQuery, {}), []);
  const [asking, setAsking] = useState(false);
  const [algorithms, setAlgorithms] = useState<SigningAlgorithm[]>(ALGORITHMS);
  const [notice, setNotice] = useState<string>();
  const rotate = useAction();
  const keys = list.data?.signingKeys;

  async function confirmed(e: Event) {
    e.preventDefault();
    const made = await rotate.run(async () => (await request(RotateSigningKeysMutation, { algorithms })).rotateSigningKeys);
    if (!made) return;
    setAsking(false);
    setNotice(made.map((k) => `New ${k.algorithm} key ${k.kid} signs from ${when(k.activatesAt)}.`).join(' '));
    list.reload();
  }

  return (
    <section aria-busy={list.loading}>
      <div class="toolbar">
        <p class="lede">A new key is published at once and signs only after the publish delay, so every verifier has it first.</p>
        <button type="button" onClick={() => (rotate.clear(), setAsking(true))}>
          Rotate keys
        </button>
      </div>
      <Notice text={notice} />
      <ErrorNote error={list.error} />
      {list.loading && !keys ? <Loading>Loading keys…</Loading> : null}
      {keys ? (
        <table class="list">
          <thead>
            <tr>
              <th scope="col">Key ID</th>
              <th scope="col">Algorithm</th>
              <th scope="col">State</th>
              <th scope="col">Created</th>
              <th scope="col">Signs from</th>
              <th scope="col">Stops signing</th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.kid}>
                <th scope="row" data-label="Key ID">
                  <code>{k.kid}</code>
                </th>
                <td data-label="Algorithm">{k.algorithm}</td>
                <td data-label="State">
                  <span class={`badge ${k.signing ? 'on' : ''}`}>{state(k)}</span>
                </td>
                <td data-label="Created" class="when">{when(k.createdAt)}</td>
                <td data-label="Signs from" class="when">{when(k.activatesAt)}</td>
                <td data-label="Stops signing" class="when">{when(k.retiredAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {asking ? (
        <Dialog title="Rotate the signing keys?" onClose={() => setAsking(false)}>
          <form onSubmit={confirmed}>
            <fieldset class="field">
              <legend>Algorithms</legend>
              {ALGORITHMS.map((a) => (
                <Checkbox key={a} id={`rotate-${a}`} label={a} checked={algorithms.includes(a)} onChange={(on) => setAlgorithms((x) => (on ? [...x, a] : x.filter((y) => y !== a)))} />
              ))}
            </fieldset>
            <p>The keys they replace keep verifying what they signed until it has expired.</p>
            <ErrorNote error={rotate.error} labels={{ algorithms: 'Algorithms' }} />
            <div class="actions">
              <button type="submit" disabled={rotate.busy || algorithms.length === 0}>
                {rotate.busy ? 'Rotating…' : 'Rotate'}
              </button>
              <button type="button" class="secondary" onClick={() => setAsking(false)}>
                Cancel
              </button>
            </div>
          </form>
        </Dialog>
      ) : null}
    </section>
  );
}
